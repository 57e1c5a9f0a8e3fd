import { randomBytes } from "node:crypto";
import { promises as fs, readFileSync, readdirSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { errnoOf } from "../errors.js";

/**
 * Crash-safe file writes. A reader, or a process started after a `kill -9` at any instant, sees
 * either the old complete file or the new complete file — never a torn one: the data goes to a
 * temporary sibling, is fsync'd, then renamed over the target, and the directory is fsync'd so
 * the rename itself survives a power loss.
 */

export interface WriteOptions {
  /**
   * File mode. Without it a rewrite keeps the mode the file already has, so a private file never
   * widens by being rewritten; a new file gets 0o600, and a missing folder 0o700: what the-loop
   * writes under its state root is its user's alone.
   */
  readonly mode?: number;
}

/** Temporary siblings start with a dot and end in `.tmp`, so directory listings can skip them. */
export function isTemporaryName(name: string): boolean {
  return name.startsWith(".") && name.endsWith(".tmp");
}

function temporarySibling(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

/** Makes the directory entries in `dir` (a rename, a new file) durable. */
export async function fsyncDirectory(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, "r");
    await handle.sync();
  } catch (error) {
    // Some filesystems refuse to fsync a directory; the rename is still atomic there.
    if (!["EISDIR", "EINVAL", "EPERM", "EBADF"].includes(errnoOf(error) ?? "")) throw error;
  } finally {
    await handle?.close();
  }
}

async function writeTemporary(path: string, data: string | Uint8Array, mode: number): Promise<string> {
  await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = temporarySibling(path);
  const handle = await fs.open(temporary, "wx", mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await fs.rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  return temporary;
}

async function existingMode(path: string): Promise<number | undefined> {
  try {
    return (await fs.stat(path)).mode & 0o777;
  } catch {
    return undefined;
  }
}

export async function writeFileAtomic(path: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
  const mode = options.mode ?? (await existingMode(path)) ?? 0o600;
  const temporary = await writeTemporary(path, data, mode);
  try {
    await fs.rename(temporary, path);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
  await fsyncDirectory(dirname(path));
}

/**
 * Creates `path` with `data` only if nothing exists there yet, atomically: of any number of
 * processes racing, exactly one returns true. (A hard link fails with EEXIST rather than replace.)
 */
export async function createFileExclusive(path: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<boolean> {
  const temporary = await writeTemporary(path, data, options.mode ?? 0o600);
  try {
    await fs.link(temporary, path);
  } catch (error) {
    if (errnoOf(error) === "EEXIST") return false;
    throw error;
  } finally {
    await fs.rm(temporary, { force: true });
  }
  await fsyncDirectory(dirname(path));
  return true;
}

export function toJsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export async function writeJsonAtomic(path: string, value: unknown, options: WriteOptions = {}): Promise<void> {
  await writeFileAtomic(path, toJsonText(value), options);
}

export class CorruptFileError extends Error {
  override readonly name: string = "CorruptFileError";
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(`${path} is not valid JSON (${cause instanceof Error ? cause.message : String(cause)}); move it aside to start afresh`);
  }
}

function parseJson(path: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CorruptFileError(path, error);
  }
}

function absentOr(error: unknown): undefined {
  if (errnoOf(error) === "ENOENT") return undefined;
  throw error;
}

/** Reads a JSON file; `undefined` when it does not exist. */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await fs.readFile(path, "utf8");
  } catch (error) {
    return absentOr(error);
  }
  return parseJson(path, text);
}

/**
 * The synchronous twin of readJsonFile, for reading many small files in a row: a sync read is
 * one system-call sequence, where the promise API makes four thread-pool round trips per file
 * (about six times slower for a thousand item snapshots).
 */
export function readJsonFileSync(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return absentOr(error);
  }
  return parseJson(path, text);
}

/** A file's text, or undefined when there is no such file; any other failure is thrown. */
export function readTextIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}

const TEMPORARY_PID = /\.(\d+)\.[0-9a-f]+\.tmp$/;

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return errnoOf(error) === "ESRCH";
  }
}

/**
 * Removes the temporary siblings a killed writer left in `dir` (its pid is in the name and no
 * longer runs). Best-effort: a daemon calls it at start, and nothing depends on its success.
 */
export function sweepStaleTemporaries(dir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = isTemporaryName(name) ? TEMPORARY_PID.exec(name)?.[1] : undefined;
    if (pid === undefined || Number(pid) === process.pid || !processGone(Number(pid))) continue;
    try {
      unlinkSync(join(dir, name));
      removed += 1;
    } catch {
      // Someone else swept it first.
    }
  }
  return removed;
}
