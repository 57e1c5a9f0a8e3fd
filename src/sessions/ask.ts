import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import type { HookChain } from "../hooks/chain.js";
import type { SessionRecord } from "../registry/record.js";
import type { SessionRegistry } from "../registry/registry.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { questionText } from "./announce.js";
import { workItemEntityOfRef } from "./lifecycle.js";

/**
 * `the-loop ask`: an agent's question posted on its work item (marked, so no ingress reads it
 * back). Inside a session the daemon posts it (the `session.ask` method of its socket, for the
 * work item the session's credential proves); an operator's `ask --work-item` posts it from the
 * command. The answer is simply the next authorized comment, delivered like any other event.
 */

export const QUESTION_MAX = 20_000;
/** A hook's summary is one line above the question. */
const SUMMARY_MAX = 300;

export interface AskDeps {
  readonly hooks: HookChain;
  readonly trackers: TrackerSet;
  readonly registry: SessionRegistry;
  readonly events: EventSink;
}

export interface AskAnswer {
  readonly workItem: string;
  readonly commentId: string | null;
  readonly posted: boolean;
  readonly error: string | null;
}

/** Posts `text` (already trimmed and bounded) on `ref`, after the waiting_for_input hooks. */
export async function postQuestion(deps: AskDeps, ref: string, text: string): Promise<AskAnswer> {
  const { question, summary } = await hookedQuestion(deps, ref, text);
  const askedAt = new Date().toISOString();
  let commentId: string | undefined;
  let failure: string | undefined;
  try {
    commentId = (await deps.trackers.forRef(ref).postComment(parseWorkItemRef(ref), questionText(ref, question, summary))).id;
  } catch (error) {
    failure = messageOf(error);
  }
  if (!failure) {
    await deps.registry.update(ref, (record) => ({ ...record, awaitingInput: { question, askedAt } }));
  }
  deps.events.emit("session.awaiting_input", {
    work_item: ref,
    question,
    comment_posted: failure === undefined,
    comment_id: commentId,
    error: failure,
  });
  return { workItem: ref, commentId: commentId ?? null, posted: failure === undefined, error: failure ?? null };
}

/**
 * `waiting_for_input` (docs/hooks.md#the-points): the operator's hooks may reword the question and put a summary
 * above it. A hook that blanks the question is not taken: the agent's own text is posted.
 */
async function hookedQuestion(deps: AskDeps, ref: string, text: string): Promise<{ readonly question: string; readonly summary: string }> {
  let record: SessionRecord | undefined;
  try {
    record = deps.registry.get(ref);
  } catch {
    // A damaged record is reported where sessions are listed; the ref alone names the item here.
    record = undefined;
  }
  const outcome = await deps.hooks.run(
    "waiting_for_input",
    { workItem: workItemEntityOfRef(ref, record), asker: "agent", node: "", question: text, summary: "" },
    { workItem: ref },
  );
  const question = outcome.context.question.trim();
  return {
    question: question === "" ? text : question.slice(0, QUESTION_MAX),
    summary: outcome.context.summary.slice(0, SUMMARY_MAX),
  };
}
