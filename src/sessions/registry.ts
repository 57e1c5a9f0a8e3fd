import { join } from "node:path";
import type { z } from "zod";
import { EXIT_FAILURE, ExitError, messageOf } from "../errors.js";
import { readTextIfPresent, writeJsonAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import type { LockOptions } from "../state/lock.js";
import { formatWorkItemRef, parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import { listSessionRecords } from "./listing.js";
import type { RegistryListing } from "./listing.js";
import { RECENT_DELIVERIES_MAX, isLive } from "./record.js";
import type { SessionRecord, SessionStatus } from "./record.js";
import { sessionRecordSchema } from "./record-schema.js";

/**
 * The session registry: one JSON file per work item, `<dir>/<slug>.json`. The file is the one
 * truth every process shares, so each change is a read-modify-write under the record's
 * cross-process lock, and each write replaces the whole file atomically. Reads take no lock: an
 * atomic rename means a reader sees the old record or the new one, never a mix.
 */

/** A record file that does not hold a session record. Stopping beats guessing what it meant. */
export class RegistryRecordError extends ExitError {
  override readonly name: string = "RegistryRecordError";
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(
      `session record ${path} is damaged: ${reason}; inspect it and repair it, or move it aside to forget that session`,
      EXIT_FAILURE,
    );
  }
}

export type { RegistryListing, RegistryProblem } from "./listing.js";

export type ClaimResult =
  | { readonly claimed: true; readonly record: SessionRecord }
  | { readonly claimed: false; readonly record: SessionRecord };

function schemaProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected content";
  const path = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${path}${issue.message}`;
}

/**
 * Record locks are held for one read-modify-write (milliseconds), so a lock that has not been
 * refreshed for 3 s belongs to a killed process: taking it over then bounds the stall a
 * `kill -9` can cause. The wait outlasts the stale period, so a waiter always gets the lock.
 */
const RECORD_LOCK: LockOptions = { staleMs: 3_000, timeoutMs: 15_000 };

export class SessionRegistry {
  readonly dir: string;
  private readonly lock: LockOptions;

  private readonly listingCache: string | undefined;

  /**
   * `listingCache`: a file (outside `dir`) where list() keeps what it read, reused while the
   * directory is unchanged — see list().
   */
  constructor(options: { dir: string; lock?: LockOptions; listingCache?: string }) {
    this.dir = options.dir;
    this.listingCache = options.listingCache;
    this.lock = options.lock ?? RECORD_LOCK;
  }

  /** Throws RefError for a ref that is not canonical-parseable. */
  pathFor(ref: string): string {
    return join(this.dir, `${workItemSlug(parseWorkItemRef(ref))}.json`);
  }

  /** The record of one work item: one file read, no listing. */
  get(ref: string): SessionRecord | undefined {
    const canonical = formatWorkItemRef(parseWorkItemRef(ref));
    return this.readRecord(canonical, this.pathFor(canonical));
  }

  /** The router's view of the registry. */
  sessionFor(ref: string): SessionRecord | undefined {
    return this.get(ref);
  }

  /**
   * Every record, oldest first. Never throws over one bad file — a listing is how an operator
   * finds it — so a file that is not a record goes in `problems` instead.
   */
  list(options: { status?: SessionStatus | "live" } = {}): RegistryListing {
    return listSessionRecords(this.dir, { ...options, cache: this.listingCache });
  }

  /**
   * Starts a session unless one is live: the check and the write happen under the record's lock,
   * so of any number of processes claiming one work item at once, exactly one gets `claimed`.
   * `build` sees the closed record it replaces, if any.
   */
  async claim(workItem: WorkItem, build: (previous: SessionRecord | undefined) => SessionRecord): Promise<ClaimResult> {
    const ref = formatWorkItemRef(parseWorkItemRef(workItem.ref));
    const path = this.pathFor(ref);
    return withLock(
      path,
      async (): Promise<ClaimResult> => {
        const previous = this.readRecord(ref, path);
        if (previous !== undefined && isLive(previous)) return { claimed: false, record: previous };
        const record = this.validated(ref, build(previous));
        await writeJsonAtomic(path, record);
        return { claimed: true, record };
      },
      this.lock,
    );
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

  /** Closes a live session; undefined (and no write) when there is none to close. */
  async close(ref: string, reason: string, at: Date): Promise<SessionRecord | undefined> {
    const outcome = await this.mutateLocked(ref, (record) => {
      if (!isLive(record)) return undefined;
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

  private async mutateLocked(
    ref: string,
    mutate: (record: SessionRecord) => SessionRecord | undefined,
  ): Promise<{ record: SessionRecord; written: boolean } | undefined> {
    const canonical = formatWorkItemRef(parseWorkItemRef(ref));
    const path = this.pathFor(canonical);
    return withLock(
      path,
      async () => {
        const current = this.readRecord(canonical, path);
        if (current === undefined) return undefined;
        const next = mutate(current);
        if (next === undefined) return { record: current, written: false };
        const record = this.validated(canonical, next);
        await writeJsonAtomic(path, record);
        return { record, written: true };
      },
      this.lock,
    );
  }

  private readRecord(ref: string, path: string): SessionRecord | undefined {
    const text = readTextIfPresent(path);
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch (error) {
      throw new RegistryRecordError(path, `not valid JSON (${messageOf(error)})`);
    }
    const result = sessionRecordSchema.safeParse(value);
    if (!result.success) throw new RegistryRecordError(path, `not a session record (${schemaProblem(result.error)})`);
    if (result.data.workItem.ref !== ref) {
      throw new RegistryRecordError(path, `it holds ${result.data.workItem.ref}, not ${ref}`);
    }
    return result.data;
  }

  /** A record about to be written: a bad one is a bug in the caller, caught before it is on disk. */
  private validated(ref: string, record: SessionRecord): SessionRecord {
    const result = sessionRecordSchema.safeParse(record);
    if (!result.success) throw new Error(`refusing to write an invalid session record for ${ref}: ${schemaProblem(result.error)}`);
    if (result.data.workItem.ref !== ref) {
      throw new Error(`refusing to write a record for ${result.data.workItem.ref} as the session of ${ref}`);
    }
    return result.data;
  }
}
