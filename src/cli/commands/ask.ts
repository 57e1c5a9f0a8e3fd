import { EXIT_FAILURE, ExitError, UsageError } from "../../errors.js";
import { loadCommandHooks } from "../../daemon/hooks.js";
import { NoDaemonError, callDaemon, callSessionSocket } from "../../daemon/socket/rpc.js";
import type { SessionCredential } from "../../daemon/socket/rpc.js";
import { askAnswerSchema, servedRefsOf, unservedReason } from "../../daemon/socket/methods.js";
import { QUESTION_MAX, postQuestion } from "../../sessions/ask.js";
import type { AskAnswer } from "../../sessions/ask.js";
import { SessionRegistry } from "../../registry/registry.js";
import { openTrackers } from "../../trackers/resolve.js";
import { openDaemonProject } from "../context.js";
import { SHELL_HASH_HINT } from "../ref-hint.js";
import type { GlobalOptions, Project } from "../context.js";
import { stderr, stdout } from "../output.js";
import { sessionCredential, sessionSocket } from "../session-guard.js";
import { canonicalRef, fullRefOf } from "../canonical-ref.js";

export interface AskOptions {
  readonly workItem?: string;
  readonly json: boolean;
}

/** How long a session's ask waits for the daemon (its hooks may reword the question). */
const ASK_TIMEOUT_MS = 120_000;

/**
 * For the agent inside a session: its question posted on its work item (marked, so no ingress
 * reads it back), and back at once. Inside a session (THE_LOOP_SESSION_TOKEN set) the daemon
 * posts it, for the work item the session's credential proves; outside one, an operator's
 * `ask --work-item REF` posts it from this command. The answer is simply the next authorized
 * comment, which the daemon delivers into the session like any other event.
 */
export async function runAsk(globals: GlobalOptions, asked: string, options: AskOptions): Promise<void> {
  const session = sessionCredential();
  const text = asked.trim();
  if (!text) throw new UsageError("the question is empty");
  if (text.length > QUESTION_MAX) throw new UsageError(`the question is too long (at most ${QUESTION_MAX} characters)`);
  const socket = session !== undefined ? sessionSocket() : undefined;
  let answer: AskAnswer;
  if (session !== undefined && socket !== undefined) {
    // The session's own socket: no config, no state root (a sandboxed session sees neither).
    refuseOtherItem(session, options.workItem);
    answer = await callSessionSocket(socket, "session.ask", { question: text }, ASK_TIMEOUT_MS, { session, result: askAnswerSchema });
  } else {
    const project = await openDaemonProject(globals, "ask");
    answer = session !== undefined ? await askThroughDaemon(project, session, text, options) : await askAsOperator(project, text, options);
  }
  if (!answer.posted) throw new ExitError(`could not post the question on ${answer.workItem}: ${answer.error ?? "no reason given"}`);
  if (options.json) {
    stdout.json({ workItem: answer.workItem, commentId: answer.commentId ?? undefined, posted: true });
    return;
  }
  stdout.line(`Posted your question on ${answer.workItem}. Now stop and wait: the answer arrives as a new message in this session.`);
}

/** Inside a session with its own socket, `--work-item` may only name the session's item (written in full). */
function refuseOtherItem(session: SessionCredential, given: string | undefined): void {
  if (given === undefined) return;
  const own = fullRefOf(session.workItem);
  if (own === undefined || fullRefOf(given) !== own) {
    throw new UsageError(`a session asks on its own work item only: this session's is ${session.workItem}; leave out --work-item`);
  }
}

async function askThroughDaemon(project: Project, session: SessionCredential, text: string, options: AskOptions): Promise<AskAnswer> {
  const own = canonicalRef(session.workItem, project);
  if (options.workItem !== undefined && canonicalRef(options.workItem, project) !== own) {
    throw new UsageError(`a session asks on its own work item only: this session's is ${own}; leave out --work-item`);
  }
  try {
    return await callDaemon(project.paths.root, "session.ask", { question: text }, ASK_TIMEOUT_MS, { session, result: askAnswerSchema });
  } catch (error) {
    if (error instanceof NoDaemonError) {
      throw new ExitError(
        `inside a session the daemon posts the question, and no daemon is running for this project (nothing listens on ${error.path}); the operator starts it with \`the-loop start\``,
        EXIT_FAILURE,
        "not-found",
      );
    }
    throw error;
  }
}

async function askAsOperator(project: Project, text: string, options: AskOptions): Promise<AskAnswer> {
  const given = options.workItem ?? process.env.THE_LOOP_WORK_ITEM;
  if (!given) {
    throw new UsageError(`which work item? pass --work-item REF (inside a session, THE_LOOP_WORK_ITEM names it); ${SHELL_HASH_HINT}`);
  }
  const ref = canonicalRef(given, project);
  const registry = project.stores?.registry ?? new SessionRegistry({ dir: project.paths.registryDir });
  const unserved = unservedReason(servedRefsOf(project.config), ref, (item) => {
    try {
      return registry.get(item) !== undefined;
    } catch {
      // A record that does not parse is still a session this project started: the item is served.
      return true;
    }
  });
  if (unserved !== undefined) throw new UsageError(unserved);
  const hooks = await loadCommandHooks(
    { config: project.config, configFile: project.loaded.source.path ?? undefined, baseDir: project.loaded.baseDir, events: project.events },
    (message) => stderr.warn(message),
  );
  try {
    return await postQuestion(
      { hooks, trackers: openTrackers(project.paths, project.events, { database: project.stores?.backend.database }), registry, events: project.events },
      ref,
      text,
    );
  } finally {
    await hooks.close();
  }
}
