import { AsyncLocalStorage } from "node:async_hooks";
import { closeSync, openSync, readFileSync, readSync, readdirSync, statSync } from "node:fs";
import type { Dirent } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
import type { z } from "zod";
import { errnoOf, messageOf } from "../errors.js";
import { parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import { fsyncDirectory, isTemporaryName, readTextIfPresent, writeJsonAtomic } from "./atomic.js";
import { folderStamp, readFolderCache, writeFolderCache } from "./folder-cache.js";
import { withLock } from "./lock.js";
import type { LockOptions } from "./lock.js";
import { RecordCodec, canonicalItem } from "./record-codec.js";
import type { ListRecordsOptions, RecordKind, RecordListing, RecordProblem, RecordTransaction, SyncRecordStore } from "./record-kind.js";

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
export class FileRecordStore<S extends z.ZodType> implements SyncRecordStore<z.output<S>> {
  readonly dir: string;
  private readonly kind: RecordKind<S>;
  private readonly codec: RecordCodec<S>;
  private readonly lock: LockOptions;
  private readonly listingCache: string | undefined;
  private readonly foreign: ReadonlySet<string>;
  private readonly trustPlacement: boolean;

  constructor(options: FileRecordStoreOptions<S>) {
    this.kind = options.kind;
    this.dir = options.dir;
    this.lock = options.lock ?? RECORD_LOCK;
    this.listingCache = options.listingCache;
    this.foreign = new Set(options.foreignFiles ?? []);
    this.trustPlacement = options.trustPlacement ?? false;
    this.codec = new RecordCodec(options.kind);
  }

  /** The item's file, `<dir>/<slug>.json`; throws RefError for a ref that does not parse. */
  locate(item: string): string {
    return join(this.dir, `${workItemSlug(parseWorkItemRef(item))}.json`);
  }

  /** The folder's modification time: every write renames a file into it and every removal unlinks one. */
  changeStamp(): string | undefined {
    try {
      return String(statSync(this.dir).mtimeMs);
    } catch {
      // No folder yet: no record either; the first write makes it, and the stamp moves.
      return undefined;
    }
  }

  /** get(), synchronously: one file read, no lock (an atomic rename means a reader sees old or new). */
  /** The work item a record names, by the kind's item field. */
  itemOf(record: z.output<S>): string | undefined {
    return this.codec.itemOf(record);
  }

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
    const schema = await this.codec.schema();
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
          const valid = this.codec.validated(schema, canonical, record);
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

  private readAt(item: string, path: string): z.output<S> | undefined {
    const text = readTextIfPresent(path);
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch (error) {
      throw this.codec.damaged(item, path, `not valid JSON (${messageOf(error)})`);
    }
    return this.codec.recordOf(item, path, value);
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
      const checked = this.codec.listed(value);
      if (checked.problem !== undefined) {
        problems.push({ where: file, message: checked.problem });
        continue;
      }
      const record = checked.record;
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
    const named = this.codec.namedItem(record);
    if ("problem" in named) return named.problem;
    const home = this.locate(named.item);
    return home === file ? undefined : `it holds ${named.named}, whose record is ${basename(home)}`;
  }
}
