import { readFileSync, realpathSync, statSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { writeFileAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";

/**
 * Codex asks "Trust this folder?" before it works in a git repository it has never seen, and
 * nobody is at an unattended session's terminal to answer. the-loop answers it ahead of each
 * start in Codex's own config, `$CODEX_HOME/config.toml`:
 *
 *     [projects."/abs/repo"]
 *     trust_level = "trusted"
 *
 * That one key is written, and nothing else of the file changes: every other key, comment and
 * blank line stays byte for byte (the file is the operator's, with their providers and settings
 * in it). A file this editor cannot read with certainty is never written.
 */

/** `$CODEX_HOME`, else `~/.codex`: where Codex keeps its config and its sessions. */
export function codexHome(env: Readonly<Record<string, string | undefined>>): string {
  if (env.CODEX_HOME) return resolve(env.CODEX_HOME);
  return join(env.HOME || homedir(), ".codex");
}

export function codexConfigFile(env: Readonly<Record<string, string | undefined>>): string {
  return join(codexHome(env), "config.toml");
}

/**
 * The folder Codex looks trust up on for a session in `cwd`: the root of the git repository it
 * is in, and for a linked worktree the root of the main repository (what `git rev-parse
 * --git-common-dir` names, less its `.git`), so every worktree of one repository shares one
 * entry. Read from the `.git` entries themselves, as git does; outside a repository, `cwd`.
 */
export function codexTrustDir(cwd: string): string {
  let dir = resolve(cwd);
  for (;;) {
    const dotGit = join(dir, ".git");
    const kind = entryKind(dotGit);
    if (kind === "dir") return dir;
    if (kind === "file") return mainRootOf(dotGit) ?? dir;
    const parent = dirname(dir);
    if (parent === dir) return resolve(cwd);
    dir = parent;
  }
}

function entryKind(path: string): "dir" | "file" | undefined {
  try {
    const stat = statSync(path);
    return stat.isDirectory() ? "dir" : stat.isFile() ? "file" : undefined;
  } catch {
    // Not there: keep walking up.
    return undefined;
  }
}

/** `.git` as a file (`gitdir: <dir>`): a linked worktree, whose `commondir` names the main `.git`. */
function mainRootOf(dotGitFile: string): string | undefined {
  try {
    const match = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGitFile, "utf8"));
    if (match?.[1] === undefined) return undefined;
    const gitDir = resolve(dirname(dotGitFile), match[1]);
    let common = gitDir;
    try {
      const named = readFileSync(join(gitDir, "commondir"), "utf8").trim();
      if (named !== "") common = isAbsolute(named) ? named : resolve(gitDir, named);
    } catch {
      // No commondir: a submodule's or a separate git dir, which is its own common dir.
    }
    // A common dir named `.git` sits in its repository's root; a bare one is its own root.
    return basename(common) === ".git" ? dirname(common) : common;
  } catch {
    // An unreadable `.git` file: the folder holding it is the best guess git would make too.
    return undefined;
  }
}

/** The spellings of `dir` Codex may key it by: as given and with symlinks resolved. */
export function codexTrustDirs(cwd: string): string[] {
  const dir = codexTrustDir(cwd);
  let real = dir;
  try {
    real = realpathSync(dir);
  } catch {
    // Not there (yet): the spelling given is the only one.
  }
  return real === dir ? [dir] : [dir, real];
}

export type TomlEdit = { readonly changed: false } | { readonly changed: true; readonly text: string } | { readonly refused: string };

/**
 * Sets `trust_level = "trusted"` in `[projects."<dir>"]` for each of `dirs`, in a config's text.
 * Pure. An existing section is edited in place (its other keys and comments kept); a missing
 * one is added at the end. Refused, with the reason, when `projects` is written in a form this
 * editor does not edit (an inline table, dotted keys naming the folder): adding a section there
 * would make the file invalid, and Codex would not start.
 */
export function withCodexTrust(text: string, dirs: readonly string[]): TomlEdit {
  let lines = splitLines(text);
  let changed = false;
  for (const dir of dirs) {
    const edit = trustOne(lines, dir);
    if ("refused" in edit) return edit;
    if (edit.lines !== lines) {
      lines = edit.lines;
      changed = true;
    }
  }
  return changed ? { changed: true, text: lines.join("") } : { changed: false };
}

function trustOne(lines: string[], dir: string): { readonly lines: string[] } | { readonly refused: string } {
  const headers = scanHeaders(lines);
  if ("refused" in headers) return headers;
  const own = headers.list.filter((header) => header.key?.[0] === "projects" && header.key[1] === dir && header.key.length === 2);
  if (own.length > 1) return { refused: `it declares [projects.${basicString(dir)}] more than once` };
  const section = own[0];
  if (section === undefined) {
    if (headers.rootProjects) return { refused: "it sets `projects` as a value at its top level; add the entry there by hand" };
    if (mentions(lines, headers.list, dir)) return { refused: `it names ${dir} outside a [projects.${basicString(dir)}] section; add the entry there by hand` };
    const last = lines[lines.length - 1];
    const prefix = last === undefined ? [] : last.endsWith("\n") ? ["\n"] : ["\n\n"];
    return { lines: [...lines, ...prefix, `[projects.${basicString(dir)}]\n`, 'trust_level = "trusted"\n'] };
  }
  const end = headers.list.find((header) => header.index > section.index)?.index ?? lines.length;
  for (let i = section.index + 1; i < end; i++) {
    const line = lines[i] ?? "";
    const match = /^([ \t]*)trust_level[ \t]*=[ \t]*("[^"\\\r\n]*"|'[^'\r\n]*')([ \t]*(?:#[^\r\n]*)?)(\r?\n)?$/.exec(line);
    if (match === null) {
      if (/^\s*(?:trust_level|"trust_level"|'trust_level')\s*=/.test(line)) return { refused: `its trust_level for ${dir} is not a plain string` };
      continue;
    }
    if (match[2]?.slice(1, -1) === "trusted") return { lines };
    const edited = [...lines];
    edited[i] = `${match[1] ?? ""}trust_level = "trusted"${match[3] ?? ""}${match[4] ?? "\n"}`;
    return { lines: edited };
  }
  const eol = lines[section.index]?.endsWith("\r\n") ? "\r\n" : "\n";
  const edited = [...lines];
  // A header on the file's last line without a newline gets one before the key.
  if (!(edited[section.index] ?? "").endsWith("\n")) edited[section.index] = `${edited[section.index] ?? ""}${eol}`;
  edited.splice(section.index + 1, 0, `trust_level = "trusted"${eol}`);
  return { lines: edited };
}

interface Header {
  readonly index: number;
  /** The table's dotted key, decoded; undefined for a header this editor does not decode. */
  readonly key: readonly string[] | undefined;
}

/**
 * Every table header (`[a.b]`, `[[a]]`) of the file, skipping the insides of multi-line
 * strings; and whether `projects` is set as a value before the first header.
 */
function scanHeaders(lines: readonly string[]): { readonly list: Header[]; readonly rootProjects: boolean } | { readonly refused: string } {
  const list: Header[] = [];
  let rootProjects = false;
  let open: '"""' | "'''" | undefined;
  for (const [index, line] of lines.entries()) {
    if (open !== undefined) {
      if (countOf(line, open) % 2 === 1) open = undefined;
      continue;
    }
    for (const quote of ['"""', "'''"] as const) {
      if (countOf(line, quote) % 2 === 1) open = quote;
    }
    if (open !== undefined) continue;
    // An array of tables starts a table too; a `[` line that reads as neither is an array value's
    // continuation (`  [1, 2],`), not a header.
    const key = /^\s*\[\[/.test(line) ? undefined : headerKey(line);
    if (key !== undefined || /^\s*\[\[/.test(line)) {
      list.push({ index, key });
    } else if (list.length === 0 && /^\s*(?:projects|"projects"|'projects')\s*[.=]/.test(line)) {
      rootProjects = true;
    }
  }
  if (open !== undefined) return { refused: "a multi-line string in it never ends" };
  return { list, rootProjects };
}

function countOf(line: string, needle: string): number {
  return line.split(needle).length - 1;
}

const KEY_PART = /\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|'([^']*)')\s*/y;

/** The decoded key of a `[a."b".'c']` header line; undefined when it does not read as one. */
export function headerKey(line: string): string[] | undefined {
  const match = /^\s*\[(.*)\]\s*(?:#.*)?\r?\n?$/.exec(line);
  if (match?.[1] === undefined) return undefined;
  const inner = match[1];
  const parts: string[] = [];
  let at = 0;
  for (;;) {
    KEY_PART.lastIndex = at;
    const part = KEY_PART.exec(inner);
    if (part === null) return undefined;
    const decoded = part[1] ?? (part[2] !== undefined ? unescapeBasic(part[2]) : part[3]);
    if (decoded === undefined) return undefined;
    parts.push(decoded);
    at = KEY_PART.lastIndex;
    if (at === inner.length) return parts;
    if (inner[at] !== ".") return undefined;
    at++;
  }
}

function unescapeBasic(text: string): string | undefined {
  const simple: Record<string, string> = { b: "\b", t: "\t", n: "\n", f: "\f", r: "\r", '"': '"', "\\": "\\" };
  let bad = false;
  const out = text.replace(/\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)/g, (_all, code: string) => {
    if (code.length > 1) return String.fromCodePoint(Number.parseInt(code.slice(1), 16));
    const char = simple[code];
    if (char === undefined) bad = true;
    return char ?? "";
  });
  return bad ? undefined : out;
}

/** `dir` as a TOML basic string. */
export function basicString(dir: string): string {
  // eslint-disable-next-line no-control-regex -- a control character must be escaped in a TOML string
  const escaped = dir.replace(/["\\\u0000-\u001f\u007f]/g, (char) => {
    const named: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r" };
    return named[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
  return `"${escaped}"`;
}

/**
 * Whether the folder's entry is defined some other way this editor does not edit: as a dotted
 * key under a `[projects]` table (`"<dir>".trust_level = …`, `"<dir>" = { … }`), or in an array
 * of tables. Then an added section would define the same table twice.
 */
function mentions(lines: readonly string[], headers: readonly Header[], dir: string): boolean {
  const quoted = basicString(dir).slice(1, -1);
  for (const [position, header] of headers.entries()) {
    const line = lines[header.index] ?? "";
    if (header.key === undefined && (line.includes(dir) || line.includes(quoted))) return true;
    if (header.key?.length !== 1 || header.key[0] !== "projects") continue;
    const end = headers[position + 1]?.index ?? lines.length;
    for (let i = header.index + 1; i < end; i++) {
      if (leadingKey(lines[i] ?? "") === dir) return true;
    }
  }
  return false;
}

/** The first part of a `key = value` or `key.more = value` line's key, decoded. */
function leadingKey(line: string): string | undefined {
  KEY_PART.lastIndex = 0;
  const part = KEY_PART.exec(line);
  if (part === null || !/^[.=]/.test(line.slice(KEY_PART.lastIndex))) return undefined;
  return part[1] ?? (part[2] !== undefined ? unescapeBasic(part[2]) : part[3]);
}

function splitLines(text: string): string[] {
  return text === "" ? [] : (text.match(/[^\n]*\n|[^\n]+$/g) ?? []);
}

export type CodexTrustOutcome =
  | { readonly kind: "unchanged"; readonly file: string; readonly dirs: readonly string[] }
  | { readonly kind: "written"; readonly file: string; readonly dirs: readonly string[] }
  | { readonly kind: "failed"; readonly file: string; readonly dirs: readonly string[]; readonly error: string };

/**
 * Writes the trust entries into Codex's config when they are missing: atomically, keeping the
 * file's mode (a new file is private), and not at all when already right. Never throws: a
 * failure is the outcome `failed`, and the spawn goes on without it.
 */
export async function ensureCodexTrust(input: { readonly file: string; readonly dirs: readonly string[] }): Promise<CodexTrustOutcome> {
  const { dirs } = input;
  // A config kept as a symlink (dotfiles in a repository) is rewritten where it points.
  let file = input.file;
  try {
    file = realpathSync(file);
  } catch {
    // Not there yet: written where it was named.
  }
  const failed = (error: string): CodexTrustOutcome => ({ kind: "failed", file, dirs, error });
  try {
    // Against other the-loop processes preparing sessions at the same moment; Codex itself
    // rewrites this file only when a person changes a setting in its UI.
    // Codex makes its home on its first run; a session may be its first.
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    return await withLock(file, async () => {
      let text: string | undefined;
      try {
        text = await readFile(file, "utf8");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
      const edit = withCodexTrust(text ?? "", dirs);
      if ("refused" in edit) return failed(`${edit.refused}; it was left as it is`);
      if (!edit.changed) return { kind: "unchanged", file, dirs } as const;
      // A new file is private: the operator's providers and keys go in it.
      await writeFileAtomic(file, edit.text, text === undefined ? { mode: 0o600 } : {});
      return { kind: "written", file, dirs } as const;
    });
  } catch (error) {
    return failed((error as Error).message);
  }
}
