import { parseWorkItemRef } from "../workitem/index.js";
import type { PullRequestLinks } from "./pr-links.js";
import { isLive } from "./record.js";
import type { SessionRecord } from "./record.js";

/**
 * The work item a control command given for `ref` acts on: the one the same keyword in a comment
 * on it would act on. A GitHub pull request's events carry its stored binding (applyLink: the
 * bound work item first, then the pull request), and the router acts on the first of them with a
 * live session, else on the first — so a command for a pull request bound to another work item
 * acts on that work item unless only the pull request has a live session. Anything else acts on
 * itself. (Local items carry no pull request, so their bindings do not steer their events.) The
 * CLI's `sessions` commands and the dashboard's actions both ask this.
 */
export function workItemActedOn(
  ref: string,
  links: Pick<PullRequestLinks, "get">,
  registry: { get(ref: string): Pick<SessionRecord, "status"> | undefined },
): string {
  if (parseWorkItemRef(ref).tracker !== "github") return ref;
  const bound = links.get(ref)?.workItem.ref;
  if (bound === undefined || bound === ref) return ref;
  try {
    return isLive(registry.get(ref)) && !isLive(registry.get(bound)) ? ref : bound;
  } catch {
    // A damaged session record: the command on the bound item reads it again and says so.
    return bound;
  }
}
