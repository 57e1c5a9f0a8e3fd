import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { EXIT_USAGE, ExitError } from "../errors.js";

/**
 * A bundle's files as consent sees them (docs/capabilities.md, "Consent"): every file read once,
 * hashed from the bytes read, and those same bytes handed on (the manifest is parsed from them),
 * so nothing is parsed from one read and hashed from another.
 *
 * A symlink is hashed by what it leads to: a link to a file by that file's content, a link to a
 * folder by the folder's place in the bundle (its files are hashed where they are). A link that
 * leads out of the bundle, or nowhere, is refused: what lies behind it is not the bundle's, and
 * could change after consent unseen.
 */

/** A bundle is a manifest and a few files; one far larger is a mistake (a checkout, a build folder). */
export const MAX_BUNDLE_FILES = 1_000;
export const MAX_BUNDLE_BYTES = 16 * 1024 * 1024;

export interface BundleSnapshot {
  /** The bundle's folder with every symlink followed: what "inside the bundle" is measured against. */
  readonly realDir: string;
  /** The SHA-256 of the whole bundle: what consent records. */
  readonly sha256: string;
  /** Each entry's SHA-256 by its path in the bundle (`/` separated): a file's content, a link's target's. */
  readonly files: ReadonlyMap<string, string>;
  /** The bytes read of the entries asked for by `keep`, exactly as they were hashed. */
  readonly bytes: ReadonlyMap<string, Buffer>;
  /** The symlinks a bundle may not hold (leading out of it, or nowhere), each with its fix: a bundle with any is refused. */
  readonly problems: readonly string[];
}

export interface BundleReadOptions {
  /** Paths in the bundle whose bytes to keep (the manifest). */
  readonly keep?: readonly string[];
  /** Called after each file's bytes are read, with its path in the bundle: a test's hook point. */
  readonly afterRead?: (path: string) => void | Promise<void>;
}

const refuse = (message: string): ExitError => new ExitError(message, EXIT_USAGE, "config");

/** Whether `path` is `root` or inside it. */
export function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** A regular file's bytes, read once through one descriptor that never follows a symlink. */
export async function readRegularFile(path: string): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if (!(await handle.stat()).isFile()) throw refuse(`${path} is not a regular file`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

export const sha256Of = (bytes: Buffer | string): string => createHash("sha256").update(bytes).digest("hex");

interface Entry {
  readonly path: string;
  /** `file` and `link` hash content; `dir-link` hashes the folder's place in the bundle. */
  readonly kind: "file" | "link" | "dir-link";
  readonly content: Buffer;
}

/**
 * Every file of the bundle at `dir`, read once and hashed; an `ExitError` (exit 2) for a bundle
 * too large or holding what is no file, the symlinks it may not hold in `problems`.
 */
export async function readBundleFiles(dir: string, options: BundleReadOptions = {}): Promise<BundleSnapshot> {
  const realDir = await realpath(dir);
  const keep = new Set(options.keep ?? []);
  const entries: Entry[] = [];
  const bytes = new Map<string, Buffer>();
  const problems: string[] = [];
  let total = 0;
  const tooLarge = (): ExitError =>
    refuse(
      `capability bundle ${dir} holds more than ${MAX_BUNDLE_FILES} files or ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB; a bundle is its manifest and the few files it runs — point at that folder, not a checkout`,
    );
  const add = async (entry: Entry): Promise<void> => {
    total += entry.content.length;
    entries.push(entry);
    if (keep.has(entry.path)) bytes.set(entry.path, entry.content);
    if (entries.length > MAX_BUNDLE_FILES || total > MAX_BUNDLE_BYTES) throw tooLarge();
    await options.afterRead?.(entry.path);
  };
  const walk = async (folder: string): Promise<void> => {
    for (const name of (await readdir(folder)).sort()) {
      const absolute = join(folder, name);
      const path = relative(realDir, absolute).split(sep).join("/");
      const info = await lstat(absolute);
      if (info.isDirectory()) {
        await walk(absolute);
      } else if (info.isFile()) {
        if (info.size > MAX_BUNDLE_BYTES) throw tooLarge();
        await add({ path, kind: "file", content: await readRegularFile(absolute) });
      } else if (info.isSymbolicLink()) {
        const entry = await linkEntry(dir, realDir, absolute, path);
        if (typeof entry === "string") problems.push(entry);
        else await add(entry);
      } else {
        throw refuse(`capability bundle ${dir}: ${path} is neither a file, a folder nor a symlink; a bundle holds files only`);
      }
    }
  };
  await walk(realDir);
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = createHash("sha256");
  const files = new Map<string, string>();
  for (const entry of entries) {
    // Length-prefixed, so no two bundles share a byte stream.
    hash.update(`${entry.kind}\0${Buffer.byteLength(entry.path)}\0${entry.path}\0${entry.content.length}\0`);
    hash.update(entry.content);
    files.set(entry.path, sha256Of(entry.kind === "dir-link" ? Buffer.concat([Buffer.from("dir-link\0"), entry.content]) : entry.content));
  }
  return { realDir, sha256: hash.digest("hex"), files, bytes, problems };
}

/** A symlink's entry, hashed by what it leads to; the problem when it leads out of the bundle or nowhere. */
async function linkEntry(dir: string, realDir: string, absolute: string, path: string): Promise<Entry | string> {
  // Fails closed: a link that does not resolve is refused just below, never hashed as its text.
  const target = await realpath(absolute).catch(() => undefined);
  if (target === undefined) return `capability bundle ${dir}: the symlink ${path} leads nowhere; remove it, or make it lead to a file inside the bundle`;
  if (!within(realDir, target)) {
    return `capability bundle ${dir}: the symlink ${path} leads outside the bundle (to ${target}); what lies there could change after consent unseen — copy what it needs into the bundle instead of linking to it`;
  }
  const info = await stat(target);
  if (info.isDirectory()) return { path, kind: "dir-link", content: Buffer.from(relative(realDir, target).split(sep).join("/")) };
  if (!info.isFile()) throw refuse(`capability bundle ${dir}: the symlink ${path} leads to neither a file nor a folder; a bundle holds files only`);
  if (info.size > MAX_BUNDLE_BYTES) throw refuse(`capability bundle ${dir}: the symlink ${path} leads to a file larger than a bundle may be`);
  return { path, kind: "link", content: await readRegularFile(target) };
}

/** The paths whose hash differs between what was consented to and what is there now (added, removed or changed). */
export function changedPaths(consented: ReadonlyMap<string, string>, now: ReadonlyMap<string, string>): string[] {
  const paths = new Set([...consented.keys(), ...now.keys()]);
  return [...paths].filter((path) => consented.get(path) !== now.get(path)).sort();
}
