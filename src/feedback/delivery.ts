import { messageOf } from "../errors.js";
import type { BoundEvents } from "../events/bound.js";
import type { EventSink } from "../events/log.js";
import type { FeedbackConfig } from "../config/schema.js";
import { feedbackFor } from "../routing/feedback.js";
import type { InboundCheck, InboundEvent } from "../routing/inbound.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { parseWorkItemRef } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import type { CiAttemptStore, CiStep } from "./attempts.js";
import { jobLogTail } from "./github.js";
import { ciFailureMessage, ciGaveUpComment, cleanLogTail } from "./message.js";
import type { CiLog } from "./message.js";

/**
 * A CI failure on its way into a live session (docs/github.md#ci-failures), decided here and
 * pasted by the session's delivery: counted per pull request under its lock before the paste —
 * a failure told already is dropped, the first one past `maxCiFixAttempts` becomes a marked
 * comment asking a person (`ci.gave_up`), once — and its text built with the log tail only when
 * the pull request allows it. The decisions are plain functions (table-tested); what they need
 * of the world is the port below.
 */

/** What the CI delivery needs of the daemon: the count, the job logs, the tracker to comment on, the event log. */
export interface CiDeliveryPort {
  /** Each pull request's failures told; without it none is counted or capped. */
  readonly attempts: Pick<CiAttemptStore, "claim" | "forget"> | undefined;
  /** The tail of a GitHub Actions job's log (undefined: GitHub has none); absent without a GitHub tracker. */
  readonly jobLog: ((repository: string, jobId: number, maxBytes: number) => Promise<Buffer | undefined>) | undefined;
  /** Posts `body` on the work item `ref` names (the pull request). */
  postComment(ref: string, body: string): Promise<void>;
  readonly events: EventSink;
  readonly now: () => Date;
}

/** The port over the daemon's own parts: its CI record store, its trackers and its event log. */
export function ciDeliveryPort(parts: {
  readonly attempts: CiAttemptStore | undefined;
  readonly trackers: TrackerSet;
  readonly events: EventSink;
  readonly now: () => Date;
}): CiDeliveryPort {
  const github = parts.trackers.github;
  return {
    attempts: parts.attempts,
    jobLog: github === undefined ? undefined : (repository, jobId, maxBytes) => jobLogTail(github, repository, jobId, maxBytes),
    postComment: async (ref, body) => {
      await parts.trackers.forRef(ref).postComment(parseWorkItemRef(ref), body);
    },
    events: parts.events,
    now: parts.now,
  };
}

/** The events of the event's turn, bound to its work item and delivery. */
export type CiTurnEvents = BoundEvents<{ readonly work_item: string; readonly delivery_id: string }>;

export interface CiFailureInput {
  readonly event: InboundEvent;
  /** The work item whose session the failure goes to. */
  readonly workItem: WorkItem;
  readonly turnEvents: CiTurnEvents;
  readonly feedback: FeedbackConfig | undefined;
  readonly askCommand: string;
}

/**
 * What the session's delivery does with the failure: paste `text` (then say `delivered()`, or
 * `release()` when the paste did not happen, so a retry is told), drop it as `reason`, or nothing
 * more (`settled`: a person was asked instead).
 */
export type CiDelivery =
  | { readonly kind: "deliver"; readonly text: string; delivered(): void; release(): Promise<void> }
  | { readonly kind: "drop"; readonly reason: CiDropReason }
  | { readonly kind: "settled" };

export type CiDropReason = "already-processed" | "ci-gave-up";

/** Pure: the pull request a CI failure is on — the event's pull request among its work items, else its last one. */
export function pullRequestOf(event: Pick<InboundEvent, "workItems" | "pullRequest">): WorkItem | undefined {
  return event.workItems.find((item) => item.ref === event.pullRequest?.ref) ?? event.workItems.at(-1);
}

/** Pure: what a claim's step means for the delivery — paste, drop (why), or ask a person. */
export function ciVerdict(
  step: CiStep,
): { readonly kind: "deliver" } | { readonly kind: "drop"; readonly reason: CiDropReason } | { readonly kind: "give-up" } {
  if (step === "deliver") return { kind: "deliver" };
  if (step === "duplicate") return { kind: "drop", reason: "already-processed" };
  if (step === "given-up") return { kind: "drop", reason: "ci-gave-up" };
  return { kind: "give-up" };
}

/** Where the log part comes from: decided (withheld, none, the text the check carries) or a job's log to read. */
export type CiLogPlan = CiLog | { readonly kind: "fetch"; readonly repository: string; readonly jobId: number };

/**
 * Pure: the log part of a failure's message before any read. Authorization comes first: a log
 * not allowed is never read, whatever else is true of it.
 */
export function ciLogPlan(check: InboundCheck | undefined, maxBytes: number, canReadJobs: boolean): CiLogPlan {
  if (check === undefined) return { kind: "none", reason: "the check carries none" };
  if (check.logAllowed !== true) return { kind: "withheld", reason: check.logWithheld ?? "its pull request's author is not authorized" };
  if (maxBytes === 0) return { kind: "none", reason: "routing.feedback.ciLogTailBytes is 0" };
  if (check.log !== undefined) return { kind: "tail", text: cleanLogTail(check.log, maxBytes) };
  if (check.jobId === undefined || check.repository === undefined)
    return { kind: "none", reason: "the check is not a GitHub Actions job, whose log the-loop could read; open its details" };
  if (!canReadJobs) return { kind: "none", reason: "no GitHub tracker is configured" };
  return { kind: "fetch", repository: check.repository, jobId: check.jobId };
}

/** Counts the failure for its pull request and builds its message, or says why it goes no further. */
export async function prepareCiFailure(port: CiDeliveryPort, input: CiFailureInput): Promise<CiDelivery> {
  const { event, workItem } = input;
  const pull = pullRequestOf(event);
  const settings = feedbackFor(input.feedback, pull ?? workItem);
  const maxAttempts = settings.maxCiFixAttempts;
  const store = port.attempts;
  const key = event.contentKey;
  const counted = store !== undefined && pull !== undefined && key !== undefined ? { store, pull, key } : undefined;
  let attempt = 1;
  if (counted !== undefined) {
    const claim = await counted.store.claim(counted.pull.ref, counted.key, maxAttempts, port.now());
    const verdict = ciVerdict(claim.step);
    if (verdict.kind === "drop") return verdict;
    if (verdict.kind === "give-up") {
      await giveUp(port, input, counted.pull, claim.attempts);
      return { kind: "settled" };
    }
    attempt = claim.attempts;
  }
  const check = event.check ?? { name: "check", conclusion: "failure" };
  const log = await logOf(port, event.check, settings.ciLogTailBytes);
  const pullName = pull === undefined ? "(unknown)" : pull.url === "" ? pull.ref : `${pull.ref} (${pull.url})`;
  const text = ciFailureMessage({ workItem: workItem.ref, pullRequest: pullName, check, log, attempt, maxAttempts, askCommand: input.askCommand });
  return {
    kind: "deliver",
    text,
    delivered: () => {
      if (event.pullRequest === undefined) return;
      input.turnEvents.emit("ci.delivered", {
        pull_request: event.pullRequest.ref,
        check: check.name,
        conclusion: check.conclusion,
        attempt,
        max_attempts: maxAttempts,
        log: log.kind,
      });
    },
    release: async () => {
      if (counted !== undefined) await counted.store.forget(counted.pull.ref, counted.key);
    },
  };
}

/** The marked comment asking a person, and `ci.gave_up`; a comment that cannot be posted is reported, and the event says so. */
async function giveUp(port: CiDeliveryPort, input: CiFailureInput, pull: WorkItem, attempts: number): Promise<void> {
  const check = input.event.check ?? { name: "", conclusion: "" };
  const comment = ciGaveUpComment({ workItem: input.workItem.ref, attempts, check });
  let commented = true;
  try {
    await port.postComment(pull.ref, comment);
  } catch (error) {
    commented = false;
    input.turnEvents.emit("dispatch.failed", {
      action: "ci-gave-up",
      error: `the comment asking a person could not be posted: ${messageOf(error)}`,
      will_retry: false,
    });
  }
  port.events.emit("ci.gave_up", { work_item: input.workItem.ref, pull_request: pull.ref, check: check.name, attempts, commented });
}

async function logOf(port: CiDeliveryPort, check: InboundCheck | undefined, maxBytes: number): Promise<CiLog> {
  const read = port.jobLog;
  const plan = ciLogPlan(check, maxBytes, read !== undefined);
  if (plan.kind !== "fetch") return plan;
  if (read === undefined) return { kind: "none", reason: "no GitHub tracker is configured" };
  try {
    const tail = await read(plan.repository, plan.jobId, maxBytes);
    return tail === undefined
      ? { kind: "none", reason: "GitHub has no log for the job (it may have expired)" }
      : { kind: "tail", text: cleanLogTail(tail, maxBytes) };
  } catch (error) {
    return { kind: "none", reason: `the job's log could not be read (${messageOf(error).slice(0, 200)}); open its details` };
  }
}
