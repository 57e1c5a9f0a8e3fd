import { ExitError, UsageError, messageOf } from "../../errors.js";
import { loadCommandHooks } from "../../daemon/hooks.js";
import { questionText } from "../../sessions/announce.js";
import { workItemEntityOfRef } from "../../sessions/lifecycle.js";
import type { SessionRecord } from "../../registry/record.js";
import { SessionRegistry } from "../../registry/registry.js";
import { openTrackers } from "../../trackers/resolve.js";
import { parseWorkItemRef } from "../../workitem/index.js";
import { openProject } from "../context.js";
import { SHELL_HASH_HINT } from "../ref-hint.js";
import type { GlobalOptions, Project } from "../context.js";
import { stderr, stdout } from "../output.js";
import { canonicalRef } from "./sessions.js";

export interface AskOptions {
  readonly workItem?: string;
  readonly json: boolean;
}

const QUESTION_MAX = 20_000;
/** A hook's summary is one line above the question. */
const SUMMARY_MAX = 300;

/**
 * For the agent inside a session: posts its question on the work item (marked, so no ingress
 * reads it back) and returns at once. The answer is simply the next authorized comment, which
 * the daemon delivers into the session like any other event.
 */
export async function runAsk(globals: GlobalOptions, asked: string, options: AskOptions): Promise<void> {
  const project = await openProject(globals, "ask");
  const given = options.workItem ?? process.env.THE_LOOP_WORK_ITEM;
  if (!given) {
    throw new UsageError(`which work item? pass --work-item REF (inside a session, THE_LOOP_WORK_ITEM names it); ${SHELL_HASH_HINT}`);
  }
  const text = asked.trim();
  if (!text) throw new UsageError("the question is empty");
  if (text.length > QUESTION_MAX) throw new UsageError(`the question is too long (at most ${QUESTION_MAX} characters)`);
  const ref = canonicalRef(given, project);
  const registry = new SessionRegistry({ dir: project.paths.registryDir });
  const { question, summary } = await hookedQuestion(project, ref, text, registry);
  const askedAt = new Date().toISOString();
  let commentId: string | undefined;
  let failure: string | undefined;
  try {
    const tracker = openTrackers(project.paths, project.events).forRef(ref);
    commentId = (await tracker.postComment(parseWorkItemRef(ref), questionText(ref, question, summary))).id;
  } catch (error) {
    failure = messageOf(error);
  }
  if (!failure) {
    await registry.update(ref, (record) => ({ ...record, awaitingInput: { question, askedAt } }));
  }
  project.events.emit("session.awaiting_input", {
    work_item: ref,
    question,
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

/**
 * `waiting_for_input` (R2.7): the operator's hooks may reword the question and put a summary
 * above it. The hooks are loaded here, once; a declaration that does not load is recorded and the
 * question goes out as the agent wrote it. A hook that blanks the question is not taken: the
 * agent's own text is posted.
 */
async function hookedQuestion(
  project: Project,
  ref: string,
  text: string,
  registry: SessionRegistry,
): Promise<{ readonly question: string; readonly summary: string }> {
  const hooks = await loadCommandHooks(
    { config: project.config, configFile: project.loaded.source.path ?? undefined, baseDir: project.loaded.baseDir, events: project.events },
    (message) => stderr.warn(message),
  );
  try {
    let record: SessionRecord | undefined;
    try {
      record = registry.get(ref);
    } catch {
      // A damaged record is reported where sessions are listed; the ref alone names the item here.
      record = undefined;
    }
    const outcome = await hooks.run(
      "waiting_for_input",
      { workItem: workItemEntityOfRef(ref, record), asker: "agent", node: "", question: text, summary: "" },
      { workItem: ref },
    );
    const question = outcome.context.question.trim();
    return {
      question: question === "" ? text : question.slice(0, QUESTION_MAX),
      summary: outcome.context.summary.slice(0, SUMMARY_MAX),
    };
  } finally {
    await hooks.close();
  }
}
