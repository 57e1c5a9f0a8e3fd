import { RefError, parseWorkItemRef } from "../workitem/index.js";
import type { GitHubRef } from "../workitem/index.js";

/**
 * How a pull request names the work items it is for, read the way GitHub reads it: a closing
 * keyword in its description (`Fixes #12`), or — weaker, and checked for existence before use —
 * a head branch named after an issue (`issue-12`). Pure functions over text, so every spelling
 * is a row of a table test.
 */

export interface RepositoryContext {
  /** Lower case, with the port when there is one; `github.com` for github.com. */
  readonly host: string;
  readonly owner: string;
  readonly repo: string;
  /** The pull request's own number: a description naming its own PR closes nothing. */
  readonly number?: number;
}

// The nine keywords GitHub honours; `\b` keeps `prefixes #1` from counting as `fixes #1`.
const KEYWORD = String.raw`\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b`;
// GitHub accepts `Fixes #1`, `Fixes: #1` and `Fixes:#1`, never a keyword glued to the reference.
const SEPARATOR = String.raw`(?::[ \t]*|[ \t]+)`;
const NAME = String.raw`[A-Za-z0-9][A-Za-z0-9_.-]*`;
// A repository may start with a dot (`octo/.github`); refIn still refuses `.` and `..`.
const REPO = String.raw`[A-Za-z0-9_.-]+`;
const NUMBER = String.raw`([1-9][0-9]{0,9})`;
const REFERENCE = [
  String.raw`(?:(${NAME})\/(${REPO}))?#${NUMBER}`,
  String.raw`GH-${NUMBER}`,
  String.raw`https?:\/\/([A-Za-z0-9.-]+(?::[0-9]{1,5})?)\/(${NAME})\/(${REPO})\/issues\/${NUMBER}`,
].join("|");
// What follows a reference must end it: `#12abc` and `#12/x` are not references to #12.
const CLOSING = new RegExp(`${KEYWORD}${SEPARATOR}(?:${REFERENCE})(?![A-Za-z0-9_/])`, "gi");

// Code (fenced with backticks or tildes, or inline) and HTML comments are not read as prose: a PR
// template's `<!-- Fixes #123 -->` example and a quoted `fixes #1` close nothing.
const NOT_PROSE = /```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]*`|<!--[\s\S]*?(?:-->|$)/g;

/**
 * The issues a pull request description closes, in order of appearance, each once. Unqualified
 * forms (`#N`, `GH-N`) are in the PR's repository; `owner/repo#N` and URLs name their own (a URL
 * only on the same host). A reference to the PR itself is left out.
 */
export function closingReferences(body: string | null | undefined, context: RepositoryContext): GitHubRef[] {
  if (!body) return [];
  const prose = body.replace(NOT_PROSE, " ");
  const host = context.host.toLowerCase();
  const found: GitHubRef[] = [];
  const seen = new Set<string>();
  for (const match of prose.matchAll(CLOSING)) {
    const [, owner, repo, hashNumber, ghNumber, urlHost, urlOwner, urlRepo, urlNumber] = match;
    let target: GitHubRef | undefined;
    if (hashNumber !== undefined) {
      target = refIn(host, owner ?? context.owner, repo ?? context.repo, hashNumber);
    } else if (ghNumber !== undefined) {
      target = refIn(host, context.owner, context.repo, ghNumber);
    } else if (urlNumber !== undefined && urlHost?.toLowerCase() === host) {
      target = refIn(host, urlOwner ?? "", urlRepo ?? "", urlNumber);
    }
    if (target === undefined || isSelf(target, host, context)) continue;
    const key = `${target.owner}/${target.repo}#${target.number}`;
    if (seen.has(key)) continue;
    seen.add(key);
    found.push(target);
  }
  return found;
}

/**
 * The issue number a head branch is named after: `issue-12`, `issue/12`, also with a suffix
 * (`issue-12-fix-login`, `Issue/12/retry`). Anything else names no issue.
 */
export function branchIssueNumber(branch: string | null | undefined): number | undefined {
  if (!branch) return undefined;
  const match = /^issue[-/]([1-9][0-9]{0,9})(?:$|[-_/.])/i.exec(branch);
  if (!match) return undefined;
  const number = Number(match[1]);
  return number <= 2_147_483_647 ? number : undefined;
}

/** Validated through the one ref parser, so what comes out is canonical (lower case) or nothing. */
function refIn(host: string, owner: string, repo: string, number: string): GitHubRef | undefined {
  const path = host === "github.com" ? `${owner}/${repo}` : `${host}/${owner}/${repo}`;
  try {
    const ref = parseWorkItemRef(`github:${path}#${number}`);
    return ref.tracker === "github" ? ref : undefined;
  } catch (error) {
    if (error instanceof RefError) return undefined;
    throw error;
  }
}

function isSelf(ref: GitHubRef, host: string, context: RepositoryContext): boolean {
  return (
    context.number !== undefined &&
    ref.number === context.number &&
    ref.host === host &&
    ref.owner === context.owner.toLowerCase() &&
    ref.repo === context.repo.toLowerCase()
  );
}
