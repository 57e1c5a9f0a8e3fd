import { AsyncLocalStorage } from "node:async_hooks";
import { readFileSync, readdirSync } from "node:fs";
import type { Dirent } from "node:fs";
import { rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { z } from "zod";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../errors.js";
import { fsyncDirectory, isTemporaryName, readTextIfPresent, writeJsonAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import type { LockOptions } from "../state/lock.js";
import { RefError, formatWorkItemRef, parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import type { controlRecordSchema } from "./record-schema.js";
import type { ControlCommand, ControlEffect, ControlRecord, ControlSource } from "./types.js";

/**
 * The control-record store: the last execution-control command of each work item, one JSON file
 * per item, `<dir>/<slug>.json` (`<state.root>/sessions/control/`, R5.5). The daemon and the CLI
 * both decide commands for an item, so each decision is a read-modify-write inside the item's
 * cross-process lock (transaction), and each write replaces the whole file atomically. Reads take
 * no lock: an atomic rename means a reader sees the old record or the new one, never a mix.
 *
 * Reading loads no schema library (`sessions list` shows every item's last command on a tight
 * start-up budget, and the zod import alone costs about 100 ms): what is read is checked by
 * controlRecordProblem below, which test/control/store.test.ts holds to record-schema.ts. The
 * schema is loaded by the first transaction, and every write is checked against both.
 */

/** A control file that does not hold the item's control record. Stopping beats guessing what it meant. */
export class ControlRecordError extends ExitError {
  override readonly name: string = "ControlRecordError";
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(
      `control record ${path} is damaged: ${reason}; inspect it and repair it, or delete it to forget the item's last control command`,
      EXIT_FAILURE,
    );
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

/**
 * The registry's lock options (src/sessions/registry.ts): a decision holds the lock for
 * milliseconds, so a lock not refreshed for 3 s belongs to a killed process and is taken over,
 * which bounds the stall a `kill -9` can cause; the wait outlasts the stale period.
 */
const RECORD_LOCK: LockOptions = { staleMs: 3_000, timeoutMs: 15_000 };

// Spelled out rather than imported: ./types.js re-exports the command list from the config
// schema, which loads zod. A Record over each union fails to compile if a member is missing.
const COMMANDS: Record<ControlCommand, true> = { start: true, stop: true, pause: true, resume: true };
const SOURCES: Record<ControlSource, true> = { comment: true, cli: true, hook: true };
const EFFECTS: Record<ControlEffect, true> = {
  started: true,
  "start-pending": true,
  resumed: true,
  paused: true,
  stopped: true,
  recorded: true,
  noop: true,
  refused: true,
};
/** Delivery ids (and content keys) of the commands an item took that its record keeps, newest last. */
export const CONTROL_RECENT_DELIVERIES_MAX = 50;

const KEYS: Record<keyof ControlRecord, true> = {
  version: true,
  ref: true,
  command: true,
  source: true,
  actor: true,
  requestedAt: true,
  effect: true,
  note: true,
  deliveryId: true,
  recentDeliveries: true,
  clearedAt: true,
  clearedBy: true,
};

/** zod's `z.iso.datetime()`: a real calendar date, UTC (`Z`), seconds required, any fraction. */
const ISO_UTC = new RegExp(
  "^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|" +
    "\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8])))" +
    "T(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?Z$",
);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const got = (value: unknown): string => (value === undefined ? "missing" : `got ${JSON.stringify(value)}`);

function oneOf(key: string, value: unknown, allowed: Record<string, true>): string | undefined {
  if (typeof value === "string" && Object.hasOwn(allowed, value)) return undefined;
  return `${key}: expected one of ${Object.keys(allowed).join(", ")}; ${got(value)}`;
}

function nonEmpty(key: string, value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? undefined : `${key}: expected a non-empty string; ${got(value)}`;
}

function timestamp(key: string, value: unknown): string | undefined {
  return typeof value === "string" && ISO_UTC.test(value) ? undefined : `${key}: expected an ISO 8601 UTC timestamp; ${got(value)}`;
}

function optional(value: unknown, check: () => string | undefined): string | undefined {
  return value === undefined ? undefined : check();
}

/**
 * Why `value` is not a control record, or undefined when it is one: the same rules as
 * controlRecordSchema (record-schema.ts), without loading zod. Exported for the test that keeps
 * the two in step.
 */
export function controlRecordProblem(value: unknown): string | undefined {
  if (!isObject(value)) return "not a JSON object";
  const unknown = Object.keys(value).find((key) => !Object.hasOwn(KEYS, key));
  if (unknown !== undefined) return `unknown key ${JSON.stringify(unknown)}`;
  if (value.version !== 1) return `version: expected 1; ${got(value.version)}`;
  const problem =
    nonEmpty("ref", value.ref) ??
    oneOf("command", value.command, COMMANDS) ??
    oneOf("source", value.source, SOURCES) ??
    nonEmpty("actor", value.actor) ??
    timestamp("requestedAt", value.requestedAt) ??
    oneOf("effect", value.effect, EFFECTS) ??
    optional(value.note, () => (typeof value.note === "string" ? undefined : `note: expected a string; ${got(value.note)}`)) ??
    optional(value.deliveryId, () =>
      typeof value.deliveryId === "string" ? undefined : `deliveryId: expected a string; ${got(value.deliveryId)}`,
    ) ??
    optional(value.recentDeliveries, () =>
      Array.isArray(value.recentDeliveries) &&
      value.recentDeliveries.length <= CONTROL_RECENT_DELIVERIES_MAX &&
      value.recentDeliveries.every((id) => typeof id === "string")
        ? undefined
        : `recentDeliveries: expected at most ${CONTROL_RECENT_DELIVERIES_MAX} strings; ${got(value.recentDeliveries)}`,
    ) ??
    optional(value.clearedAt, () => timestamp("clearedAt", value.clearedAt)) ??
    optional(value.clearedBy, () => nonEmpty("clearedBy", value.clearedBy));
  if (problem !== undefined) return problem;
  if ((value.clearedAt === undefined) !== (value.clearedBy === undefined)) return "clearedAt and clearedBy go together";
  return undefined;
}

type ControlRecordSchema = typeof controlRecordSchema;

let schemaLoading: Promise<ControlRecordSchema> | undefined;

/** The zod schema, loaded once per process by the first transaction. */
function loadSchema(): Promise<ControlRecordSchema> {
  schemaLoading ??= import("./record-schema.js").then((module) => module.controlRecordSchema);
  return schemaLoading;
}

function schemaProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected content";
  const path = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${path}${issue.message}`;
}

function canonicalRef(ref: string): string {
  return formatWorkItemRef(parseWorkItemRef(ref));
}

/** The record files (paths) whose transaction the current async call chain is inside. */
const openTransactions = new AsyncLocalStorage<ReadonlySet<string>>();

export class ControlStore {
  /** `<state.root>/sessions/control`. */
  readonly dir: string;
  private readonly lock: LockOptions;

  constructor(options: { dir: string; lock?: LockOptions }) {
    this.dir = options.dir;
    this.lock = options.lock ?? RECORD_LOCK;
  }

  /** `<dir>/<slug>.json`; throws RefError for a ref that does not parse. */
  pathFor(ref: string): string {
    return join(this.dir, `${workItemSlug(parseWorkItemRef(ref))}.json`);
  }

  /**
   * The item's record: one file read, no lock (atomic renames: a reader sees old or new). Throws
   * ControlRecordError on a damaged file or one holding another ref.
   */
  get(ref: string): ControlRecord | undefined {
    const canonical = canonicalRef(ref);
    return this.readRecord(canonical, this.pathFor(canonical));
  }

  /**
   * Every record, by ref. Never throws over one bad file — a listing is how an operator finds it —
   * so a file that is not a record goes in `problems`. Temporary files and other names are ignored.
   */
  list(): ControlListing {
    const records: ControlRecord[] = [];
    const problems: ControlListingProblem[] = [];
    let entries: Dirent[];
    try {
      entries = readdirSync(this.dir, { withFileTypes: true });
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return { records, problems };
      throw error;
    }
    for (const entry of entries) {
      const name = entry.name;
      if (!name.endsWith(".json") || isTemporaryName(name) || entry.isDirectory()) continue;
      const file = join(this.dir, name);
      let value: unknown;
      try {
        value = JSON.parse(readFileSync(file, "utf8")) as unknown;
      } catch (error) {
        // Deleted (a reset) while we list: not a problem with the store.
        if (errnoOf(error) === "ENOENT") continue;
        problems.push({ file, message: error instanceof SyntaxError ? `not valid JSON (${error.message})` : messageOf(error) });
        continue;
      }
      const problem = controlRecordProblem(value) ?? this.placementProblem(file, (value as ControlRecord).ref);
      if (problem !== undefined) problems.push({ file, message: problem });
      else records.push(value as ControlRecord);
    }
    records.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
    return { records, problems };
  }

  /**
   * Runs `work` holding the item's cross-process lock: the daemon and the CLI deciding a command
   * for one item never interleave. Not reentrant: a transaction on the item inside its own
   * transaction throws at once rather than wait for a lock its caller holds. The transaction
   * object is dead once `work` settles; a write it left running is waited for before unlocking.
   */
  async transaction<T>(ref: string, work: (tx: ControlTransaction) => Promise<T>): Promise<T> {
    const canonical = canonicalRef(ref);
    const path = this.pathFor(canonical);
    const outer = openTransactions.getStore();
    if (outer?.has(path)) {
      throw new Error(`a control transaction on ${canonical} is already open in this call chain; transactions are not reentrant`);
    }
    // Loaded before locking, so the first write does not hold the lock while zod loads.
    const schema = await loadSchema();
    return withLock(
      path,
      async () => {
        let open = true;
        const pending = new Set<Promise<void>>();
        const ensureOpen = (what: string): void => {
          if (!open) throw new Error(`the control transaction on ${canonical} is over; a ${what} after it would not be locked`);
        };
        const track = async (change: Promise<void>): Promise<void> => {
          pending.add(change);
          try {
            await change;
          } finally {
            pending.delete(change);
          }
        };
        const tx: ControlTransaction = {
          read: () => {
            ensureOpen("read");
            return this.readRecord(canonical, path);
          },
          write: async (record) => {
            ensureOpen("write");
            await track(writeJsonAtomic(path, validated(schema, canonical, record)));
          },
          remove: async () => {
            ensureOpen("remove");
            await track(removeDurably(path));
          },
        };
        try {
          return await openTransactions.run(new Set([...(outer ?? []), path]), () => work(tx));
        } finally {
          open = false;
          await Promise.allSettled([...pending]);
        }
      },
      this.lock,
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

  private readRecord(ref: string, path: string): ControlRecord | undefined {
    const text = readTextIfPresent(path);
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch (error) {
      throw new ControlRecordError(path, `not valid JSON (${messageOf(error)})`);
    }
    const problem = controlRecordProblem(value);
    if (problem !== undefined) throw new ControlRecordError(path, `not a control record (${problem})`);
    const record = value as ControlRecord;
    if (record.ref !== ref) throw new ControlRecordError(path, `it holds ${record.ref}, not ${ref}`);
    return record;
  }

  /** Why a valid record does not belong in `file`: get() of its ref would not find it there. */
  private placementProblem(file: string, ref: string): string | undefined {
    let canonical: string;
    try {
      canonical = canonicalRef(ref);
    } catch (error) {
      if (error instanceof RefError) return `ref: ${error.message}`;
      throw error;
    }
    if (canonical !== ref) return `ref: ${ref} is not canonical (${canonical})`;
    const home = this.pathFor(canonical);
    return home === file ? undefined : `it holds ${ref}, whose record is ${basename(home)}`;
  }
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

async function removeDurably(path: string): Promise<void> {
  await rm(path, { force: true });
  await fsyncDirectory(dirname(path));
}

/** A record about to be written: a bad one is a bug in the caller, caught before it is on disk. */
function validated(schema: ControlRecordSchema, ref: string, record: ControlRecord): ControlRecord {
  const result = schema.safeParse(record);
  if (!result.success) throw new Error(`refusing to write an invalid control record for ${ref}: ${schemaProblem(result.error)}`);
  // The schema and the hand check agree (a test holds them together); this keeps a drift from
  // writing a file the store would then refuse to read.
  const problem = controlRecordProblem(result.data);
  if (problem !== undefined) throw new Error(`refusing to write an invalid control record for ${ref}: ${problem}`);
  if (result.data.ref !== ref) {
    throw new Error(`refusing to write a control record for ${result.data.ref} in the transaction of ${ref} (records carry the canonical ref)`);
  }
  return result.data;
}
