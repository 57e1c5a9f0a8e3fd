import { messageOf } from "../errors.js";
import { ciFailureMessage, ciGaveUpComment, cleanLogTail, jobLogTail } from "../feedback/index.js";
import type { CiLog } from "../feedback/index.js";
import { feedbackFor } from "../routing/feedback.js";
import type { InboundEvent } from "../routing/inbound.js";
import { parseWorkItemRef } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import { SETTLED, settle } from "./context.js";
import type { ContextNeeds, HandleResult, Turn } from "./context.js";

/**
 * A CI failure into a live session (docs/github.md#ci-failures): counted per pull request under
 * its lock before the paste — a failure told already is dropped, the first one past
 * `maxCiFixAttempts` becomes a marked comment asking a person (`ci.gave_up`), once — and its
 * text built with the log tail only when the pull request allows it.
 */

export type CiClaim =
  { readonly proceed: true; readonly attempt: number; readonly maxAttempts: number } | { readonly proceed: false; readonly result: HandleResult };

type CiContext = ContextNeeds<"now" | "policy", "ciAttempts" | "events" | "trackers">;

/** The pull request a CI failure is on: the event's PR among its work items. */
function pullRequestOf(event: InboundEvent): WorkItem | undefined {
  return event.workItems.find((item) => item.ref === event.pullRequest?.ref) ?? event.workItems.at(-1);
}

/** Counts the failure for its pull request, or says why it goes no further. */
export async function claimCiFailure(ctx: CiContext, turn: Turn): Promise<CiClaim> {
  const { event } = turn;
  const pull = pullRequestOf(event);
  const settings = feedbackFor(ctx.policy.feedback, pull ?? turn.workItem);
  const store = ctx.options.ciAttempts;
  if (store === undefined || pull === undefined || event.contentKey === undefined) return { proceed: true, attempt: 1, maxAttempts: settings.maxCiFixAttempts };
  const { step, attempts } = await store.claim(pull.ref, event.contentKey, settings.maxCiFixAttempts, ctx.now());
  if (step === "deliver") return { proceed: true, attempt: attempts, maxAttempts: settings.maxCiFixAttempts };
  if (step === "duplicate") return { proceed: false, result: settle(turn, "already-processed") };
  if (step === "given-up") return { proceed: false, result: settle(turn, "ci-gave-up") };
  const check = event.check ?? { name: "", conclusion: "" };
  const comment = ciGaveUpComment({ workItem: turn.workItem.ref, attempts, check });
  let commented = true;
  try {
    await ctx.options.trackers.forRef(pull.ref).postComment(parseWorkItemRef(pull.ref), comment);
  } catch (error) {
    commented = false;
    turn.events.emit("dispatch.failed", {
      action: "ci-gave-up",
      error: `the comment asking a person could not be posted: ${messageOf(error)}`,
      will_retry: false,
    });
  }
  ctx.options.events.emit("ci.gave_up", {
    work_item: turn.workItem.ref,
    pull_request: pull.ref,
    check: check.name,
    attempts,
    commented,
  });
  return { proceed: false, result: SETTLED };
}

/** Takes back a claim whose paste did not happen. */
export async function releaseCiFailure(ctx: ContextNeeds<never, "ciAttempts">, event: InboundEvent): Promise<void> {
  const pull = pullRequestOf(event);
  if (ctx.options.ciAttempts === undefined || pull === undefined || event.contentKey === undefined) return;
  await ctx.options.ciAttempts.forget(pull.ref, event.contentKey);
}

/** The message for the session, with its log part; what the log part was, for the event log. */
export async function ciFailureText(
  ctx: ContextNeeds<"policy", "trackers">,
  turn: Turn,
  claim: { readonly attempt: number; readonly maxAttempts: number },
  askCommand: string,
): Promise<{ text: string; log: CiLog["kind"] }> {
  const { event } = turn;
  const check = event.check ?? { name: "check", conclusion: "failure" };
  const pull = pullRequestOf(event);
  const settings = feedbackFor(ctx.policy.feedback, pull ?? turn.workItem);
  const log = await logOf(ctx, event, settings.ciLogTailBytes);
  const pullName = pull === undefined ? "(unknown)" : pull.url === "" ? pull.ref : `${pull.ref} (${pull.url})`;
  const text = ciFailureMessage({
    workItem: turn.workItem.ref,
    pullRequest: pullName,
    check,
    log,
    attempt: claim.attempt,
    maxAttempts: claim.maxAttempts,
    askCommand,
  });
  return { text, log: log.kind };
}

async function logOf(ctx: ContextNeeds<never, "trackers">, event: InboundEvent, maxBytes: number): Promise<CiLog> {
  const check = event.check;
  if (check === undefined) return { kind: "none", reason: "the check carries none" };
  if (check.logAllowed !== true) return { kind: "withheld", reason: check.logWithheld ?? "its pull request's author is not authorized" };
  if (maxBytes === 0) return { kind: "none", reason: "routing.feedback.ciLogTailBytes is 0" };
  if (check.log !== undefined) return { kind: "tail", text: cleanLogTail(check.log, maxBytes) };
  if (check.jobId === undefined || check.repository === undefined)
    return { kind: "none", reason: "the check is not a GitHub Actions job, whose log the-loop could read; open its details" };
  const github = ctx.options.trackers.github;
  if (github === undefined) return { kind: "none", reason: "no GitHub tracker is configured" };
  try {
    const tail = await jobLogTail(github, check.repository, check.jobId, maxBytes);
    return tail === undefined
      ? { kind: "none", reason: "GitHub has no log for the job (it may have expired)" }
      : { kind: "tail", text: cleanLogTail(tail, maxBytes) };
  } catch (error) {
    return { kind: "none", reason: `the job's log could not be read (${messageOf(error).slice(0, 200)}); open its details` };
  }
}
