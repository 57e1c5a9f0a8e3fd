import type { LocatedRecordStore, LockOptions, RecordBackend } from "../state/index.js";
import type { WorkItem } from "../workitem/index.js";
import { registryListing, sessionRecordFiles } from "./listing.js";
import type { RegistryListing } from "./listing.js";
import { RECENT_DELIVERIES_MAX, isLive, sessionRecordKind } from "./record.js";
import type { SessionRecord, SessionStatus } from "./record.js";
import { sessionRecordSchema } from "./record-schema.js";

/**
 * The session registry: the session record of each work item, kept in the record store
 * (state/record-store.ts) as one JSON file per work item, `<dir>/<slug>.json`. The record is the
 * one truth every process shares, so each change is a transaction (read → decide → write under
 * the record's cross-process lock), and each write replaces the whole record atomically. Reads
 * take no lock: an atomic rename means a reader sees the old record or the new one, never a mix.
 */

export { RegistryRecordError } from "./record.js";
export type { RegistryListing, RegistryProblem } from "./listing.js";

export type ClaimResult = { readonly claimed: true; readonly record: SessionRecord } | { readonly claimed: false; readonly record: SessionRecord };

/** Reads of one record parse it with the schema, which the registry loads with itself. */
const REGISTRY_KIND = { ...sessionRecordKind, schema: sessionRecordSchema };

/** The records a listing keeps: every one, those of one status, or the live ones. */
function withStatus(wanted: SessionStatus | "live" | undefined): (record: SessionRecord) => boolean {
  return (record) => (wanted === "live" ? isLive(record) : wanted === undefined || record.status === wanted);
}

export class SessionRegistry {
  readonly dir: string;
  /** The records themselves, for what copies a state whole (`state migrate`). */
  readonly records: LocatedRecordStore<SessionRecord>;

  /**
   * `listingCache`: a file (outside `dir`) where list() keeps what it read, reused while the
   * directory is unchanged — see list(). `backend`: where the records are (files in `dir` when
   * omitted; state/backend.ts).
   */
  constructor(options: { dir: string; lock?: LockOptions; listingCache?: string; backend?: RecordBackend }) {
    this.dir = options.dir;
    this.records = sessionRecordFiles(options.dir, {
      kind: REGISTRY_KIND,
      ...(options.lock ? { lock: options.lock } : {}),
      ...(options.listingCache !== undefined ? { cache: options.listingCache } : {}),
      ...(options.backend ? { backend: options.backend } : {}),
    });
  }

  /** Moves whenever any process writes or removes a session record (state/backend.ts). */
  changeStamp(): string | undefined {
    return this.records.changeStamp();
  }

  /** Throws RefError for a ref that is not canonical-parseable. */
  pathFor(ref: string): string {
    return this.records.locate(ref);
  }

  /** The record of one work item: one file read, no listing. Throws RegistryRecordError on a damaged file. */
  get(ref: string): SessionRecord | undefined {
    return this.records.readSync(ref);
  }

  /** The router's view of the registry. */
  sessionFor(ref: string): SessionRecord | undefined {
    return this.get(ref);
  }

  /**
   * Every record, oldest first. Never throws over one bad file — a listing is how an operator
   * finds it — so a file that is not a record goes in `problems` instead. With a listing cache,
   * one file read replaces the scan while the folder is unchanged.
   */
  list(options: { status?: SessionStatus | "live" } = {}): RegistryListing {
    return registryListing(this.records.listSync({ keep: withStatus(options.status) }));
  }

  /**
   * list(), read from the store itself rather than its synchronous view: on a database, every
   * record committed before the call, not the mirror (which may lag by milliseconds) — for a count
   * a decision rests on, such as the caps under the start queue's lock. On files, list() itself.
   */
  async listNow(options: { status?: SessionStatus | "live" } = {}): Promise<RegistryListing> {
    return registryListing(await this.records.list({ keep: withStatus(options.status) }));
  }

  /**
   * Starts a session unless one is live: the check and the write happen under the record's lock,
   * so of any number of processes claiming one work item at once, exactly one gets `claimed`.
   * `build` sees the closed record it replaces, if any.
   */
  async claim(workItem: WorkItem, build: (previous: SessionRecord | undefined) => SessionRecord): Promise<ClaimResult> {
    return this.records.transaction(workItem.ref, async (tx): Promise<ClaimResult> => {
      const previous = tx.read();
      if (previous !== undefined && isLive(previous)) return { claimed: false, record: previous };
      return { claimed: true, record: await tx.write(build(previous)) };
    });
  }

  /**
   * Read-modify-write of one record under its lock. `mutate` sees the record as it is now, not as
   * the caller last read it; returning undefined leaves the file alone.
   */
  async update(ref: string, mutate: (record: SessionRecord) => SessionRecord | undefined): Promise<SessionRecord | undefined> {
    const outcome = await this.mutateLocked(ref, mutate);
    return outcome?.record;
  }

  /**
   * Notes an event delivered to the session: its delivery id, or every id it may come back under
   * (see deliveryKeys); an id seen before is not added twice.
   */
  async touch(ref: string, delivery: string | readonly string[] | undefined, at: Date): Promise<SessionRecord | undefined> {
    const ids = delivery === undefined ? [] : typeof delivery === "string" ? [delivery] : delivery;
    return this.update(ref, (record) => {
      const fresh = ids.filter((id) => !record.recentDeliveries.includes(id));
      const recentDeliveries = fresh.length === 0 ? record.recentDeliveries : [...record.recentDeliveries, ...fresh].slice(-RECENT_DELIVERIES_MAX);
      return { ...record, lastEventAt: at.toISOString(), recentDeliveries };
    });
  }

  /**
   * Closes a live session, or one that failed to start (its close is how an operator lays it to
   * rest: its checkout released, its problem gone from `status`); undefined (and no write) when
   * there is none to close.
   */
  async close(ref: string, reason: string, at: Date): Promise<SessionRecord | undefined> {
    const outcome = await this.mutateLocked(ref, (record) => {
      if (!isLive(record) && record.status !== "failed") return undefined;
      // A closed session awaits nothing: a question left open would read as pending in listings.
      const { awaitingInput: _answered, ...rest } = record;
      return { ...rest, status: "closed", closedAt: at.toISOString(), closeReason: reason };
    });
    return outcome?.written ? outcome.record : undefined;
  }

  /**
   * Moves the record to `to` if its status is one of `from` (a compare-and-set, so a pause and a
   * close racing each other cannot both apply). Undefined when there is no record or the status
   * did not match. Reaching `closed` stamps closedAt; leaving it clears closedAt and closeReason.
   */
  async setStatus(ref: string, from: readonly SessionStatus[], to: SessionStatus, at: Date): Promise<SessionRecord | undefined> {
    const outcome = await this.mutateLocked(ref, (record) => {
      if (!from.includes(record.status)) return undefined;
      const stamp = at.toISOString();
      if (to === "closed") return { ...record, status: to, lastEventAt: stamp, closedAt: record.closedAt ?? stamp };
      const { closedAt: _closedAt, closeReason: _closeReason, ...rest } = record;
      return { ...rest, status: to, lastEventAt: stamp };
    });
    return outcome?.written ? outcome.record : undefined;
  }

  /**
   * Moves the item's record aside (`<slug>.json.<reason>-<time>`, kept for an operator, never
   * deleted): what a close does with a record that does not parse. Where it went; undefined when
   * there was no record.
   */
  async moveAside(ref: string, reason: string): Promise<string | undefined> {
    return this.records.moveAside(ref, reason);
  }

  private async mutateLocked(
    ref: string,
    mutate: (record: SessionRecord) => SessionRecord | undefined,
  ): Promise<{ record: SessionRecord; written: boolean } | undefined> {
    return this.records.transaction(ref, async (tx) => {
      const current = tx.read();
      if (current === undefined) return undefined;
      const next = mutate(current);
      if (next === undefined) return { record: current, written: false };
      return { record: await tx.write(next), written: true };
    });
  }
}
