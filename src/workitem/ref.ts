import { createHash } from "node:crypto";

/**
 * A work item reference names one issue or pull request on one tracker:
 *
 *   github:owner/repo#15                    (github.com implied, never written)
 *   github:ghe.example.com/owner/repo#15    (GitHub Enterprise: the host is part of the ref)
 *   local:<project>#7                       (the embedded local tracker)
 *
 * Refs are canonical in lower case: GitHub treats owner, repository and host case-insensitively,
 * and a local project is a directory name, so `Octo/Repo` and `octo/repo` must be one work item.
 */

export type TrackerKind = "github" | "local";
export const TRACKER_KINDS: readonly TrackerKind[] = ["github", "local"];
export const DEFAULT_GITHUB_HOST = "github.com";

export interface GitHubRef {
  readonly tracker: "github";
  readonly host: string;
  readonly owner: string;
  readonly repo: string;
  readonly number: number;
}

export interface LocalRef {
  readonly tracker: "local";
  readonly project: string;
  readonly number: number;
}

export type WorkItemRef = GitHubRef | LocalRef;

export type WorkItemKind = "issue" | "pull_request";

export class RefError extends Error {
  override readonly name: string = "RefError";
}

const MAX_NUMBER = 2_147_483_647;
const HOST_LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
// A port has no leading zero, so each host:port is written one way only (one ref, one slug).
const HOST_RE = new RegExp(`^${HOST_LABEL}(?:\\.${HOST_LABEL})*(?::([1-9]\\d{0,4}))?$`);
const MAX_PORT = 65_535;
// GitHub logins are letters, digits and hyphens; Enterprise managed users add `_`.
const OWNER_RE = /^[a-z0-9][a-z0-9_.-]{0,99}$/;
const REPO_RE = /^[a-z0-9._-]{1,100}$/;
const PROJECT_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const NUMBER_RE = /^[1-9][0-9]{0,9}$/;

function parseNumber(text: string, whole: string): number {
  if (!NUMBER_RE.test(text) || Number(text) > MAX_NUMBER) {
    throw new RefError(`invalid work item number "${text}" in "${whole}": expected a positive whole number`);
  }
  return Number(text);
}

function checkHost(host: string, whole: string): string {
  const lower = host.toLowerCase();
  const match = HOST_RE.exec(lower);
  // A bare name like "localhost" only counts as a host with a port; otherwise it is an owner.
  if (!match || !(lower.includes(".") || lower.includes(":"))) {
    throw new RefError(`invalid host "${host}" in "${whole}"`);
  }
  const port = match[1];
  if (port !== undefined && Number(port) > MAX_PORT) {
    throw new RefError(`invalid port ${port} in "${whole}": expected 1 to ${MAX_PORT}`);
  }
  return lower;
}

function checkOwner(owner: string, whole: string): string {
  const lower = owner.toLowerCase();
  if (!OWNER_RE.test(lower)) throw new RefError(`invalid owner "${owner}" in "${whole}"`);
  return lower;
}

function checkRepo(repo: string, whole: string): string {
  const lower = repo.toLowerCase();
  if (!REPO_RE.test(lower) || lower === "." || lower === "..") {
    throw new RefError(`invalid repository name "${repo}" in "${whole}"`);
  }
  return lower;
}

export function checkLocalProject(project: string, whole = project): string {
  const lower = project.toLowerCase();
  if (!PROJECT_RE.test(lower)) {
    throw new RefError(`invalid local project "${project}" in "${whole}": use letters, digits, ".", "_" and "-", starting with a letter or digit (at most 63)`);
  }
  return lower;
}

function githubRef(path: string, numberText: string, whole: string): GitHubRef {
  const parts = path.split("/");
  if (parts.length === 2) {
    const [owner = "", repo = ""] = parts;
    return {
      tracker: "github",
      host: DEFAULT_GITHUB_HOST,
      owner: checkOwner(owner, whole),
      repo: checkRepo(repo, whole),
      number: parseNumber(numberText, whole),
    };
  }
  if (parts.length === 3) {
    const [host = "", owner = "", repo = ""] = parts;
    return {
      tracker: "github",
      host: checkHost(host, whole),
      owner: checkOwner(owner, whole),
      repo: checkRepo(repo, whole),
      number: parseNumber(numberText, whole),
    };
  }
  throw new RefError(`invalid GitHub work item "${whole}": expected github:owner/repo#N or github:host/owner/repo#N`);
}

/** Parses the canonical form `<tracker>:<path>#<number>`. */
export function parseWorkItemRef(text: string): WorkItemRef {
  const match = /^([a-z][a-z0-9-]*):([^#\s]+)#([^#\s]+)$/i.exec(text.trim());
  if (!match) {
    throw new RefError(`invalid work item reference "${text}": expected github:owner/repo#N, github:host/owner/repo#N or local:project#N`);
  }
  const [, trackerText = "", path = "", numberText = ""] = match;
  const tracker = trackerText.toLowerCase();
  if (tracker === "github") return githubRef(path, numberText, text);
  if (tracker === "local") {
    return { tracker: "local", project: checkLocalProject(path, text), number: parseNumber(numberText, text) };
  }
  throw new RefError(`unknown tracker "${trackerText}" in "${text}": known trackers are ${TRACKER_KINDS.join(", ")}`);
}

export interface LooseRefOptions {
  /** The local project a bare `7` or `#7` refers to; without it those forms are refused. */
  readonly defaultLocalProject?: string;
}

export interface ParsedRefInput {
  readonly ref: WorkItemRef;
  /** Known only when the input said so (a /pull/ URL); otherwise the tracker decides. */
  readonly kind?: WorkItemKind;
}

/**
 * What a person may type on the command line: the canonical forms, `owner/repo#15`, an issue or
 * pull-request URL, and — for the local tracker — `#7` or `7` in the default project.
 */
export function parseRefInput(text: string, options: LooseRefOptions = {}): ParsedRefInput {
  const input = text.trim();
  if (/^https?:\/\//i.test(input)) return parseItemUrl(input);
  const bare = /^#?([0-9]+)$/.exec(input);
  if (bare) {
    if (!options.defaultLocalProject) {
      throw new RefError(`"${text}" names no tracker: write local:project#N or owner/repo#N`);
    }
    return {
      ref: {
        tracker: "local",
        project: checkLocalProject(options.defaultLocalProject),
        number: parseNumber(bare[1] ?? "", text),
      },
    };
  }
  if (/^[a-z][a-z0-9-]*:/i.test(input) && !/^[^/:]+:\d+\//.test(input)) return { ref: parseWorkItemRef(input) };
  const short = /^([^#\s]+)#([^#\s]+)$/.exec(input);
  if (short && short[1]?.includes("/")) return { ref: githubRef(short[1], short[2] ?? "", text) };
  throw new RefError(`invalid work item reference "${text}": expected owner/repo#N, an issue or pull request URL, github:owner/repo#N or local:project#N`);
}

function parseItemUrl(text: string): ParsedRefInput {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RefError(`invalid URL "${text}"`);
  }
  const segments = url.pathname.split("/").filter(Boolean);
  const [owner, repo, section, numberText] = segments;
  const kind: WorkItemKind | undefined = section === "issues" ? "issue" : section === "pull" || section === "pulls" ? "pull_request" : undefined;
  if (!owner || !repo || !kind || !numberText) {
    throw new RefError(`"${text}" is not an issue or pull request URL (expected https://host/owner/repo/issues/N or …/pull/N)`);
  }
  const host = url.port ? `${url.hostname}:${url.port}` : url.hostname;
  const path = host.toLowerCase() === DEFAULT_GITHUB_HOST ? `${owner}/${repo}` : `${host}/${owner}/${repo}`;
  return { ref: githubRef(path, numberText, text), kind };
}

export function formatWorkItemRef(ref: WorkItemRef): string {
  if (ref.tracker === "local") return `local:${ref.project}#${ref.number}`;
  const host = ref.host === DEFAULT_GITHUB_HOST ? "" : `${ref.host}/`;
  return `github:${host}${ref.owner}/${ref.repo}#${ref.number}`;
}

/** `owner/repo` for GitHub, the project name for the local tracker. */
export function repositoryOf(ref: WorkItemRef): string {
  return ref.tracker === "local" ? ref.project : `${ref.owner}/${ref.repo}`;
}

export function hostOf(ref: WorkItemRef): string {
  return ref.tracker === "local" ? "local" : ref.host;
}

export function sameWorkItem(a: WorkItemRef, b: WorkItemRef): boolean {
  return formatWorkItemRef(a) === formatWorkItemRef(b);
}

const SLUG_READABLE_MAX = 60;

/**
 * A name for files and tmux sessions, safe for any input: only [a-z0-9-], at most 69 characters,
 * never empty, never `.` or `..`. The readable part alone is not injective (`a-b/c` and `a/b-c`
 * read the same), so a short hash of the whole input always follows it.
 */
export function workItemSlug(input: WorkItemRef | string): string {
  const canonical = typeof input === "string" ? input : formatWorkItemRef(input);
  const readable =
    canonical
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .slice(0, SLUG_READABLE_MAX)
      .replace(/^-+|-+$/g, "") || "item";
  const hash = createHash("sha256").update(canonical.toLowerCase(), "utf8").digest("hex").slice(0, 8);
  return `${readable}-${hash}`;
}
