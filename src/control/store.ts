import { DamagedRecordError } from "../state/record-kind.js";
import { FILE_BACKEND } from "../state/backend.js";
import { compileShape } from "../state/record-shape.js";
import type { LocatedRecordStore, RecordBackend } from "../state/backend.js";
import type { LockOptions } from "../state/lock.js";
import type { RecordDamage, RecordKind, RecordProblem } from "../state/record-kind.js";
import type { controlRecordSchema } from "./record-schema.js";
import { controlRecordShape } from "./record-shape.js";
import type { ControlRecord } from "./types.js";

/**
 * The control-record store: the last execution-control command of each work item, kept in the
 * record store (state/record-store.ts) as one JSON file per item, `<dir>/<slug>.json`
 * (`<state.root>/sessions/control/`, docs/control.md#where-it-is-kept). The daemon and the CLI both decide commands for an
 * item, so each decision is a read-modify-write inside the item's cross-process lock
 * (transaction), and each write replaces the whole file atomically. Reads take no lock: an
 * atomic rename means a reader sees the old record or the new one, never a mix.
 *
 * Reading loads no schema library (`sessions list` shows every item's last command on a tight
 * start-up budget, and the zod import alone costs about 100 ms): what is read is checked against
 * the schema's generated shape (record-shape.ts). The schema itself is loaded by the first
 * transaction, and every write is checked against both.
 */

const REMEDY = "inspect it and repair it, or delete it to forget the item's last control command";

/** A control file that does not hold the item's control record. Stopping beats guessing what it meant. */
export class ControlRecordError extends DamagedRecordError {
  override readonly name: string = "ControlRecordError";
  constructor(damage: RecordDamage) {
    super(damage, REMEDY);
  }
}

export interface ControlTransaction {
  /** The item's record as it is now, under the lock. */
  read(): ControlRecord | undefined;
  /**
   * Replaces the record atomically (validated first: an invalid record is a bug, thrown before it
   * is on disk; its ref must be the transaction's).
   */
  write(record: ControlRecord): Promise<void>;
  /**
   * Deletes the record (durably), so the item has none: how a command that wrote its record
   * first and then failed to act puts back "no record" as it found it.
   */
  remove(): Promise<void>;
}

export interface ControlListingProblem {
  /** The record file's path. */
  readonly file: string;
  /** Why it was left out of the listing. */
  readonly message: string;
}

export interface ControlListing {
  readonly records: ControlRecord[];
  readonly problems: ControlListingProblem[];
}

/** Delivery ids (and content keys) of the commands an item took that its record keeps, newest last. */
export const CONTROL_RECENT_DELIVERIES_MAX = controlRecordShape.properties.recentDeliveries.maxItems;

/**
 * Why `value` is not a control record, or undefined when it is one: controlRecordSchema's rules,
 * checked through its generated shape without loading zod (test/control/store.test.ts holds the
 * two together).
 */
export const controlRecordProblem = compileShape(controlRecordShape);

/** Control records as a record kind (state/record-store.ts). */
export const controlRecordKind: RecordKind<typeof controlRecordSchema> = {
  name: "control record",
  itemField: "ref",
  schema: async () => (await import("./record-schema.js")).controlRecordSchema,
  check: controlRecordProblem,
  order: (a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0),
  remedy: REMEDY,
  damaged: (damage) => new ControlRecordError(damage),
  misaddressed: (named, item) => `refusing to write a control record for ${named} in the transaction of ${item} (records carry the canonical ref)`,
};

export class ControlStore {
  /** `<state.root>/sessions/control`. */
  readonly dir: string;
  /** The records themselves, for what copies a state whole (`state migrate`). */
  readonly records: LocatedRecordStore<ControlRecord>;

  /** `backend`: where the records are (files in `dir` when omitted; state/backend.ts). */
  constructor(options: { dir: string; lock?: LockOptions; backend?: RecordBackend }) {
    this.dir = options.dir;
    this.records = (options.backend ?? FILE_BACKEND).records(controlRecordKind, {
      key: "control",
      file: { dir: options.dir, ...(options.lock ? { lock: options.lock } : {}) },
    });
  }

  /** `<dir>/<slug>.json`; throws RefError for a ref that does not parse. */
  pathFor(ref: string): string {
    return this.records.locate(ref);
  }

  /**
   * The item's record: one file read, no lock (atomic renames: a reader sees old or new). Throws
   * ControlRecordError on a damaged file or one holding another ref.
   */
  get(ref: string): ControlRecord | undefined {
    return this.records.readSync(ref);
  }

  /**
   * Every record, by ref. Never throws over one bad file — a listing is how an operator finds it —
   * so a file that is not a record, or not its item's, goes in `problems`. Temporary files and
   * other names are ignored.
   */
  list(): ControlListing {
    const { records, problems } = this.records.listSync();
    return { records, problems: problems.map(fileProblem) };
  }

  /**
   * Runs `work` holding the item's cross-process lock: the daemon and the CLI deciding a command
   * for one item never interleave. Not reentrant: a transaction on the item inside its own
   * transaction throws at once rather than wait for a lock its caller holds. The transaction
   * object is dead once `work` settles; a write it left running is waited for before unlocking.
   */
  async transaction<T>(ref: string, work: (tx: ControlTransaction) => Promise<T>): Promise<T> {
    return this.records.transaction(ref, (tx) =>
      work({
        read: () => tx.read(),
        write: async (record) => {
          await tx.write(record);
        },
        remove: () => tx.remove(),
      }),
    );
  }

  /**
   * Marks the standing (uncleared) record cleared by `by` at `at`, keeping it for listings;
   * undefined (no write) when there is none or it is already cleared. With `only`, a standing
   * record is cleared only when it is that command (sameCommand): a command given since the
   * caller looked is left as it is. Takes the lock itself.
   */
  async clear(ref: string, by: string, at: Date, only?: ControlRecord): Promise<ControlRecord | undefined> {
    return this.transaction(ref, async (tx) => {
      const current = tx.read();
      if (current === undefined || current.clearedAt !== undefined) return undefined;
      if (only !== undefined && !sameCommand(current, only)) return undefined;
      const cleared: ControlRecord = { ...current, clearedAt: at.toISOString(), clearedBy: by };
      await tx.write(cleared);
      return cleared;
    });
  }
}

function fileProblem({ where, message }: RecordProblem): ControlListingProblem {
  return { file: where, message };
}

/**
 * Whether two records are the same command given once: same request, whatever its effect became
 * since (a pending start confirmed, or marked pending) and whether it was cleared.
 */
export function sameCommand(a: ControlRecord, b: ControlRecord): boolean {
  return (
    a.ref === b.ref &&
    a.command === b.command &&
    a.source === b.source &&
    a.actor === b.actor &&
    a.requestedAt === b.requestedAt &&
    a.deliveryId === b.deliveryId
  );
}
