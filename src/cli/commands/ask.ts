import { ExitError, UsageError, messageOf } from "../../errors.js";
import { questionText } from "../../sessions/announce.js";
import { SessionRegistry } from "../../sessions/registry.js";
import { openTrackers } from "../../trackers/resolve.js";
import { parseWorkItemRef } from "../../workitem/index.js";
import { openProject } from "../context.js";
import type { GlobalOptions } from "../context.js";
import { stdout } from "../output.js";
import { canonicalRef } from "./sessions.js";

export interface AskOptions {
  readonly workItem?: string;
  readonly json: boolean;
}

const QUESTION_MAX = 20_000;

/**
 * For the agent inside a session: posts its question on the work item (marked, so no ingress
 * reads it back) and returns at once. The answer is simply the next authorized comment, which
 * the daemon delivers into the session like any other event.
 */
export async function runAsk(globals: GlobalOptions, question: string, options: AskOptions): Promise<void> {
  const project = await openProject(globals, "ask");
  const given = options.workItem ?? process.env.THE_LOOP_WORK_ITEM;
  if (!given) {
    throw new UsageError("which work item? pass --work-item REF (inside a session, THE_LOOP_WORK_ITEM names it)");
  }
  const text = question.trim();
  if (!text) throw new UsageError("the question is empty");
  if (text.length > QUESTION_MAX) throw new UsageError(`the question is too long (at most ${QUESTION_MAX} characters)`);
  const ref = canonicalRef(given, project);
  const askedAt = new Date().toISOString();
  let commentId: string | undefined;
  let failure: string | undefined;
  try {
    const tracker = openTrackers(project.paths, project.events).forRef(ref);
    commentId = (await tracker.postComment(parseWorkItemRef(ref), questionText(ref, text))).id;
  } catch (error) {
    failure = messageOf(error);
  }
  const registry = new SessionRegistry({ dir: project.paths.registryDir });
  if (!failure) {
    await registry.update(ref, (record) => ({ ...record, awaitingInput: { question: text, askedAt } }));
  }
  project.events.emit("session.awaiting_input", {
    work_item: ref,
    question: text,
    comment_posted: failure === undefined,
    comment_id: commentId,
    error: failure,
  });
  if (failure) throw new ExitError(`could not post the question on ${ref}: ${failure}`);
  if (options.json) {
    stdout.json({ workItem: ref, commentId, posted: true });
    return;
  }
  stdout.line(`Posted your question on ${ref}. Now stop and wait: the answer arrives as a new message in this session.`);
}
