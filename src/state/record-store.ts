import { AsyncLocalStorage } from "node:async_hooks";
import { closeSync, openSync, readFileSync, readSync, readdirSync } from "node:fs";
import type { Dirent } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
import type { z } from "zod";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../errors.js";
import { redactKnownSecretsIn } from "../secrets.js";
import { RefError, formatWorkItemRef, parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import { fsyncDirectory, isTemporaryName, readTextIfPresent, writeJsonAtomic } from "./atomic.js";
import { folderStamp, readFolderCache, writeFolderCache } from "./folder-cache.js";
import { withLock } from "./lock.js";
import type { LockOptions } from "./lock.js";
import type { RecordCheck } from "./record-shape.js";

/**
 * One JSON record per work item, for each record *kind* (session records, control records, and
 * the next kind alike): read and validate, write whole, decide under the record's lock, list,
 * remove. A kind is its zod schema (the record's TypeScript type is inferred from it) and a few
 * facts about it (RecordKind); where the records live is the store's business.
 *
 * `RecordStore` is the seam. It names work items (refs, in any spelling: the store makes them
 * canonical) and never a file, and every method is async, so a second backend — PostgreSQL, for
 * many daemons sharing one state — is a second implementation of the same interface: a table per
 * kind keyed by canonical ref, `get` a SELECT, `transaction` a transaction holding the row lock
 * (`SELECT … FOR UPDATE`, read once when it begins and then following its own writes, which is
 * why `read()` inside one is synchronous), `list` a scan in the kind's order. `FileRecordStore`,
 * the one backend today, keeps `<dir>/<slug>.json` per work item; its synchronous reads
 * (`readSync`, `listSync`, for the router's synchronous view and the start-up budget of
 * `sessions list`) and `locate` are its own, not the interface's.
 *
 * A record that does not parse or validate is never guessed at: reading it throws a
 * DamagedRecordError naming the work item, where the record is and why; a listing reports it
 * among its problems and lists the rest.
 */

/** What a DamagedRecordError says about the record it could not read. */
export interface RecordDamage {
  /** The kind's name: "session record". */
  readonly kind: string;
  /** The canonical ref of the work item whose record it is. */
  readonly item: string;
  /** Where the record is, as the backend names it (for files, the path). */
  readonly where: string;
  /** Why it is not a record of its item: `not valid JSON (…)`, `not a session record (…)`, `it holds …`. */
  readonly reason: string;
}

/** A stored record that does not hold its work item's record. Stopping beats guessing what it meant. */
export class DamagedRecordError extends ExitError implements RecordDamage {
  override readonly name: string = "DamagedRecordError";
  readonly kind: string;
  readonly item: string;
  readonly where: string;
  readonly reason: string;
  constructor(damage: RecordDamage, remedy: string) {
    super(`${damage.kind} ${damage.where} is damaged: ${damage.reason}; ${remedy}`, EXIT_FAILURE);
    this.kind = damage.kind;
    this.item = damage.item;
    this.where = damage.where;
    this.reason = damage.reason;
  }

  /** The record's file, for the file-backed store (the same as `where`). */
  get path(): string {
    return this.where;
  }
}

/** A kind of record kept per work item. */
export interface RecordKind<S extends z.ZodType = z.ZodType> {
  /** What one record is called in messages: "session record". */
  readonly name: string;
  /** The dotted field of a record holding its work item's canonical ref ("ref", "workItem.ref"). */
  readonly itemField: string;
  /**
   * The kind's one schema: every write is validated with it, and so is every read unless the
   * kind has a `check`. A loader when the schema library must not load until a write needs it:
   * a transaction loads it before taking its lock.
   */
  readonly schema: S | (() => Promise<S>);
  /**
   * A check of what is read that loads no schema library: the schema's generated shape compiled
   * (compileShape). Reads then return the record as stored, not a parse of it; writes are checked
   * with it too after the schema, so a stale shape cannot write what it would refuse to read.
   */
  readonly check?: RecordCheck;
  /** What a listing checks of each record, when less than a read does (default: as a read). */
  readonly listCheck?: RecordCheck;
  /** The order of a listing. */
  readonly order: (a: z.output<S>, b: z.output<S>) => number;
  /** What a DamagedRecordError tells the operator to do. */
  readonly remedy: string;
  /** The kind's own DamagedRecordError (a subclass callers catch by name). */
  readonly damaged?: (damage: RecordDamage) => DamagedRecordError;
  /** The message for a write of a record naming another work item (a caller's bug). */
  readonly misaddressed?: (named: string, item: string) => string;
}

/** The record type of a kind: inferred from its schema. */
export type RecordOf<K> = K extends RecordKind<infer S> ? z.output<S> : never;

/** A record a listing left out, and why. */
export interface RecordProblem {
  /** Where it is, as the backend names it (for files, the path). */
  readonly where: string;
  readonly message: string;
}

export interface RecordListing<T> {
  /** In the kind's order. */
  readonly records: T[];
  readonly problems: RecordProblem[];
}

export interface ListRecordsOptions<T> {
  /** Only the records this keeps (applied after any cache, so one cached listing serves every filter). */
  readonly keep?: (record: T) => boolean;
}

/** One work item's record, inside its transaction (see RecordStore.transaction). */
export interface RecordTransaction<T> {
  /** The record as it is now, under the lock; throws DamagedRecordError when it is damaged. */
  read(): T | undefined;
  /**
   * Replaces the record whole, atomically; answers what was stored (the schema's output). An
   * invalid record, or one naming another work item, is a bug: thrown before anything is written.
   */
  write(record: T): Promise<T>;
  /** Deletes the record durably (no error when there is none). */
  remove(): Promise<void>;
}

/** The records of one kind, one per work item. Work items are refs in any spelling. */
export interface RecordStore<T> {
  /** The item's record; undefined when it has none. Throws DamagedRecordError. */
  get(item: string): Promise<T | undefined>;
  /** Every record; one that is damaged goes in `problems` instead of failing the listing. */
  list(options?: ListRecordsOptions<T>): Promise<RecordListing<T>>;
  /**
   * Runs `work` holding the item's lock, which every process sharing the store respects: read →
   * decide → write without another writer in between. Not reentrant: a transaction on the item
   * inside its own throws at once rather than wait for itself. The transaction is dead once
   * `work` settles; a write it left running is waited for before the lock is released.
   */
  transaction<R>(item: string, work: (tx: RecordTransaction<T>) => Promise<R>): Promise<R>;
  /** Deletes the item's record, under its lock; whether there was one. */
  remove(item: string): Promise<boolean>;
  /**
   * Moves the item's record aside, under its lock: kept for an operator to inspect, no longer
   * the item's. Answers where it went; undefined when there was no record.
   */
  moveAside(item: string, reason: string): Promise<string | undefined>;
}

/**
 * A record's lock is held for one read-decide-write (milliseconds), so a lock not refreshed for
 * 3 s belongs to a killed process: taking it over then bounds the stall a `kill -9` can cause.
 * The wait outlasts the stale period, so a waiter always gets the lock.
 */
export const RECORD_LOCK: LockOptions = { staleMs: 3_000, timeoutMs: 15_000 };

export interface FileRecordStoreOptions<S extends z.ZodType> {
  readonly kind: RecordKind<S>;
  /** The folder of the kind's records: `<dir>/<slug>.json` per work item. */
  readonly dir: string;
  readonly lock?: LockOptions;
  /** A file (outside `dir`) where a listing is kept while the folder is unchanged (state/folder-cache.ts). */
  readonly listingCache?: string;
  /** `.json` files in `dir` that are not records of the kind (the poller's state beside session records). */
  readonly foreignFiles?: readonly string[];
  /**
   * A listing takes each record to be in its item's file without checking (a slug is a SHA-256:
   * checking ten thousand costs a tenth of a session listing). A read always checks.
   */
  readonly trustPlacement?: boolean;
}

/** The record files (lock targets) whose transaction the current async call chain is inside. */
const openTransactions = new AsyncLocalStorage<ReadonlySet<string>>();

/** Records are about a kilobyte; one bigger than this is read the ordinary way. */
const LISTING_BUFFER_BYTES = 64 * 1024;

type Checked<T> = { readonly record: T; readonly problem?: undefined } | { readonly problem: string };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function isSchema<S extends z.ZodType>(schema: S | (() => Promise<S>)): schema is S {
  return typeof schema !== "function";
}

/** The first issue of a failed parse, as `path: message`. */
function schemaProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected content";
  const path = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${path}${issue.message}`;
}

function canonicalItem(item: string): string {
  return formatWorkItemRef(parseWorkItemRef(item));
}

/**
 * readFileSync, minus what ten thousand small files make expensive: it fstat()s each file and
 * allocates a buffer per file, where one reused buffer does (about a third faster at 10,000).
 */
function readSmallFileSync(path: string, buffer: Buffer): string {
  const fd = openSync(path, "r");
  let length: number;
  try {
    length = readSync(fd, buffer, 0, buffer.length, 0);
  } finally {
    closeSync(fd);
  }
  return length < buffer.length ? buffer.toString("utf8", 0, length) : readFileSync(path, "utf8");
}

async function removeDurably(path: string): Promise<boolean> {
  try {
    await rm(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return false;
    throw error;
  }
  await fsyncDirectory(dirname(path));
  return true;
}

/** The file-backed RecordStore: `<dir>/<slug>.json` per work item, written atomically under `<file>.lock`. */
export class FileRecordStore<S extends z.ZodType> implements RecordStore<z.output<S>> {
  readonly dir: string;
  private readonly kind: RecordKind<S>;
  private readonly lock: LockOptions;
  private readonly listingCache: string | undefined;
  private readonly foreign: ReadonlySet<string>;
  private readonly trustPlacement: boolean;
  private readonly itemSteps: readonly string[];
  private schemaLoaded: S | undefined;
  private schemaLoading: Promise<S> | undefined;

  constructor(options: FileRecordStoreOptions<S>) {
    this.kind = options.kind;
    this.dir = options.dir;
    this.lock = options.lock ?? RECORD_LOCK;
    this.listingCache = options.listingCache;
    this.foreign = new Set(options.foreignFiles ?? []);
    this.trustPlacement = options.trustPlacement ?? false;
    this.itemSteps = options.kind.itemField.split(".");
    if (isSchema(options.kind.schema)) this.schemaLoaded = options.kind.schema;
  }

  /** The item's file, `<dir>/<slug>.json`; throws RefError for a ref that does not parse. */
  locate(item: string): string {
    return join(this.dir, `${workItemSlug(parseWorkItemRef(item))}.json`);
  }

  /** get(), synchronously: one file read, no lock (an atomic rename means a reader sees old or new). */
  readSync(item: string): z.output<S> | undefined {
    const canonical = canonicalItem(item);
    return this.readAt(canonical, this.locate(canonical));
  }

  async get(item: string): Promise<z.output<S> | undefined> {
    return this.readSync(item);
  }

  async list(options: ListRecordsOptions<z.output<S>> = {}): Promise<RecordListing<z.output<S>>> {
    return this.listSync(options);
  }

  /**
   * list(), synchronously. With a listing cache: every write renames a file into the folder and
   * every removal unlinks one, either of which changes its stamp, so an unchanged stamp means
   * unchanged records and one file read replaces thousands. The stamp is taken before the scan,
   * so a write during the scan makes the next listing scan again; a listing with problems is not
   * kept, so a damaged record is reported every time until it is repaired.
   */
  listSync(options: ListRecordsOptions<z.output<S>> = {}): RecordListing<z.output<S>> {
    const keep = options.keep;
    if (this.listingCache === undefined) return this.scan(keep);
    const stamp = folderStamp(this.dir);
    const cached = stamp === undefined ? undefined : readFolderCache<z.output<S>>(this.listingCache, this.dir, stamp);
    if (cached) return { records: keep ? cached.filter(keep) : cached, problems: [] };
    const everything = this.scan(undefined);
    if (stamp !== undefined && everything.problems.length === 0) {
      writeFolderCache(this.listingCache, { dir: this.dir, stamp, entries: everything.records });
    }
    return { records: keep ? everything.records.filter(keep) : everything.records, problems: everything.problems };
  }

  async transaction<R>(item: string, work: (tx: RecordTransaction<z.output<S>>) => Promise<R>): Promise<R> {
    const canonical = canonicalItem(item);
    const path = this.locate(canonical);
    this.refuseReentry(canonical, path);
    // Loaded before locking, so the first write does not hold the lock while the schema loads.
    const schema = await this.schema();
    return this.locked(path, async () => {
      let open = true;
      const pending = new Set<Promise<unknown>>();
      const ensureOpen = (what: string): void => {
        if (!open) throw new Error(`the ${this.kind.name} transaction on ${canonical} is over; a ${what} after it would not be locked`);
      };
      const track = async <V>(change: Promise<V>): Promise<V> => {
        pending.add(change);
        try {
          return await change;
        } finally {
          pending.delete(change);
        }
      };
      const tx: RecordTransaction<z.output<S>> = {
        read: () => {
          ensureOpen("read");
          return this.readAt(canonical, path);
        },
        write: async (record) => {
          ensureOpen("write");
          // No record keeps a secret this process knows, whatever text quoting one a caller put in it.
          const valid = this.validated(schema, canonical, redactKnownSecretsIn(record));
          await track(writeJsonAtomic(path, valid));
          return valid;
        },
        remove: async () => {
          ensureOpen("remove");
          await track(removeDurably(path));
        },
      };
      try {
        return await work(tx);
      } finally {
        open = false;
        await Promise.allSettled([...pending]);
      }
    });
  }

  async remove(item: string): Promise<boolean> {
    const canonical = canonicalItem(item);
    const path = this.locate(canonical);
    this.refuseReentry(canonical, path);
    return this.locked(path, () => removeDurably(path));
  }

  /** Renames the file to `<slug>.json.<reason>-<time>`, a name no read or listing takes for a record. */
  async moveAside(item: string, reason: string): Promise<string | undefined> {
    const canonical = canonicalItem(item);
    const path = this.locate(canonical);
    this.refuseReentry(canonical, path);
    const label =
      reason
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-+|-+$/g, "") || "aside";
    return this.locked(path, async () => {
      const aside = `${path}.${label}-${new Date().toISOString().replace(/[:.]/g, "-")}`;
      try {
        await rename(path, aside);
      } catch (error) {
        if (errnoOf(error) === "ENOENT") return undefined;
        throw error;
      }
      await fsyncDirectory(this.dir);
      return aside;
    });
  }

  private refuseReentry(canonical: string, path: string): void {
    if (openTransactions.getStore()?.has(path)) {
      throw new Error(`a ${this.kind.name} transaction on ${canonical} is already open in this call chain; transactions are not reentrant`);
    }
  }

  private locked<R>(path: string, critical: () => Promise<R>): Promise<R> {
    const outer = openTransactions.getStore();
    return withLock(path, () => openTransactions.run(new Set([...(outer ?? []), path]), critical), this.lock);
  }

  private schema(): Promise<S> {
    if (this.schemaLoaded !== undefined) return Promise.resolve(this.schemaLoaded);
    const load = this.kind.schema as () => Promise<S>;
    this.schemaLoading ??= load().then((schema) => (this.schemaLoaded = schema));
    return this.schemaLoading;
  }

  private itemOf(record: unknown): string | undefined {
    let value = record;
    for (const step of this.itemSteps) value = isObject(value) ? value[step] : undefined;
    return typeof value === "string" ? value : undefined;
  }

  private damaged(item: string, where: string, reason: string): DamagedRecordError {
    const damage: RecordDamage = { kind: this.kind.name, item, where, reason };
    return this.kind.damaged?.(damage) ?? new DamagedRecordError(damage, this.kind.remedy);
  }

  private checked(value: unknown): Checked<z.output<S>> {
    if (this.kind.check !== undefined) {
      const problem = this.kind.check(value);
      return problem === undefined ? { record: value as z.output<S> } : { problem };
    }
    const schema = this.schemaLoaded;
    if (schema === undefined) {
      throw new Error(`a ${this.kind.name} is read with its schema, which is not loaded: give the kind its schema, or a check`);
    }
    const result = schema.safeParse(value);
    return result.success ? { record: result.data } : { problem: schemaProblem(result.error) };
  }

  private readAt(item: string, path: string): z.output<S> | undefined {
    const text = readTextIfPresent(path);
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch (error) {
      throw this.damaged(item, path, `not valid JSON (${messageOf(error)})`);
    }
    const checked = this.checked(value);
    if (checked.problem !== undefined) throw this.damaged(item, path, `not a ${this.kind.name} (${checked.problem})`);
    const named = this.itemOf(checked.record);
    if (named !== item) throw this.damaged(item, path, `it holds ${named}, not ${item}`);
    return checked.record;
  }

  /** A record about to be written: a bad one is a bug in the caller, caught before it is on disk. */
  private validated(schema: S, item: string, record: z.output<S>): z.output<S> {
    const result = schema.safeParse(record);
    const invalid = `refusing to write an invalid ${this.kind.name} for ${item}: `;
    if (!result.success) throw new Error(invalid + schemaProblem(result.error));
    const problem = this.kind.check?.(result.data);
    if (problem !== undefined) throw new Error(invalid + problem);
    const named = this.itemOf(result.data) ?? "";
    if (named !== item) {
      throw new Error(this.kind.misaddressed?.(named, item) ?? `refusing to write a ${this.kind.name} for ${named} as the record of ${item}`);
    }
    return result.data;
  }

  private scan(keep: ((record: z.output<S>) => boolean) | undefined): RecordListing<z.output<S>> {
    const records: z.output<S>[] = [];
    const problems: RecordProblem[] = [];
    let entries: Dirent[];
    try {
      entries = readdirSync(this.dir, { withFileTypes: true });
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return { records, problems };
      throw error;
    }
    const listCheck = this.kind.listCheck ?? this.kind.check;
    const prefix = join(this.dir, sep);
    const buffer = Buffer.allocUnsafe(LISTING_BUFFER_BYTES);
    for (const entry of entries) {
      const name = entry.name;
      if (!name.endsWith(".json") || isTemporaryName(name) || this.foreign.has(name) || entry.isDirectory()) continue;
      const file = prefix + name;
      let value: unknown;
      try {
        value = JSON.parse(readSmallFileSync(file, buffer)) as unknown;
      } catch (error) {
        // Removed (closed, reset) while we list: not a problem with the records.
        if (errnoOf(error) === "ENOENT") continue;
        problems.push({ where: file, message: error instanceof SyntaxError ? `not valid JSON (${error.message})` : messageOf(error) });
        continue;
      }
      let record: z.output<S>;
      if (listCheck !== undefined) {
        const problem = listCheck(value);
        if (problem !== undefined) {
          problems.push({ where: file, message: problem });
          continue;
        }
        record = value as z.output<S>;
      } else {
        const checked = this.checked(value);
        if (checked.problem !== undefined) {
          problems.push({ where: file, message: checked.problem });
          continue;
        }
        record = checked.record;
      }
      const misplaced = this.trustPlacement ? undefined : this.placementProblem(file, record);
      if (misplaced !== undefined) {
        problems.push({ where: file, message: misplaced });
        continue;
      }
      if (keep === undefined || keep(record)) records.push(record);
    }
    records.sort(this.kind.order);
    return { records, problems };
  }

  /** Why a valid record does not belong in `file`: a read of its item would not find it there. */
  private placementProblem(file: string, record: unknown): string | undefined {
    const field = this.kind.itemField;
    const named = this.itemOf(record);
    if (named === undefined) return `${field}: missing`;
    let canonical: string;
    try {
      canonical = canonicalItem(named);
    } catch (error) {
      if (error instanceof RefError) return `${field}: ${error.message}`;
      throw error;
    }
    if (canonical !== named) return `${field}: ${named} is not canonical (${canonical})`;
    const home = this.locate(canonical);
    return home === file ? undefined : `it holds ${named}, whose record is ${basename(home)}`;
  }
}
