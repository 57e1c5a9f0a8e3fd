import type { SessionRecord } from "../registry/record.js";
import type { PullRequestHead } from "../trackers/tracker.js";
import { hostOf, parseWorkItemRef, repositoryOf } from "../workitem/index.js";

/**
 * The branch an adopted GitHub item's fresh checkout is made on (docs/scale.md, "Losing a host:
 * adoption"). The lost host's checkout is gone with it, and with it whatever the previous agent
 * had not pushed; what it pushed is on a pull request's branch, so the new checkout is made there
 * rather than on the default branch: the branch the previous checkout was on, when it was on one
 * (a pull request's own session, or one started by a linked pull request's event), else the head
 * of the pull request the work is in — the item itself when it is a pull request, then those
 * linked to its session, the last linked first — when it is open and its head is in the item's
 * repository (a fork's branch cannot be fetched by name, and a branch means nothing in another
 * repository).
 */

type Previous = Pick<SessionRecord, "workItem" | "workspace" | "pullRequests">;

/**
 * A branch name plain enough to pass on: it reaches the new agent's boot prompt as well as git
 * (which checks it again), and a pull request's head is written by whoever opened it.
 */
const PLAIN_BRANCH = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/;

/** The pull requests whose heads decide the branch, the most likely first; none when the record already names it. */
export function adoptionPullRequests(previous: Previous): string[] {
  const item = previous.workItem;
  if (item.tracker !== "github" || previous.workspace?.branch !== undefined) return [];
  const own = parseWorkItemRef(item.ref);
  const linked = [...(previous.pullRequests ?? [])]
    .reverse()
    .map((link) => link.ref)
    .filter((ref) => {
      try {
        const parsed = parseWorkItemRef(ref);
        return hostOf(parsed) === hostOf(own) && repositoryOf(parsed) === repositoryOf(own);
      } catch {
        return false;
      }
    });
  const refs = item.kind === "pull_request" ? [item.ref, ...linked] : linked;
  return [...new Set(refs)];
}

/** The branch for the adopted session's checkout, from the previous record and the heads looked up; undefined: the default branch. */
export function adoptedBranch(previous: Previous, heads: ReadonlyMap<string, PullRequestHead>): string | undefined {
  if (previous.workItem.tracker !== "github") return undefined;
  const recorded = previous.workspace?.branch;
  if (recorded !== undefined) return PLAIN_BRANCH.test(recorded) ? recorded : undefined;
  for (const ref of adoptionPullRequests(previous)) {
    const head = heads.get(ref);
    if (head !== undefined && head.state === "open" && head.headInRepository && PLAIN_BRANCH.test(head.headBranch)) return head.headBranch;
  }
  return undefined;
}
