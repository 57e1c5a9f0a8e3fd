import { messageOf } from "../errors.js";
import { isResumableSessionId } from "../harness/adapters.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import type { SessionRecord } from "../registry/record.js";
import { sameLiveSession } from "./context.js";
import type { ContextNeeds } from "./context.js";

/**
 * A harness that picks its conversation's id itself (Codex) is asked for it once it has started,
 * and the id goes on the session record, where a respawn reads it to resume that conversation.
 * Returns the id the record holds afterwards. Never throws: without the learned id the record
 * keeps the one the-loop assigned, a respawn's resume finds no such conversation, and it starts
 * a fresh one (`session.harness_id_unknown` says so up front).
 */
export async function learnHarnessSessionId(
  ctx: ContextNeeds<never, "events" | "registry" | "sessionEnv">,
  adapter: HarnessAdapter,
  session: SessionRecord,
  cwd: string,
  startedAt: Date,
): Promise<string> {
  if (adapter.learnSessionId === undefined) return session.harnessSessionId;
  const { options } = ctx;
  const ref = session.workItem.ref;
  let learned: string | undefined;
  let error = "it wrote no session file for this folder in time";
  try {
    learned = await adapter.learnSessionId({ cwd, env: { ...process.env, ...options.sessionEnv(ref) }, startedAt, workItem: ref });
  } catch (caught) {
    error = messageOf(caught);
  }
  if (learned !== undefined && !isResumableSessionId(learned)) {
    // Read off a file in the harness's home: never handed to an argv unless it is a plain id.
    error = "the id in its session file is not a plain id";
    learned = undefined;
  }
  if (learned === undefined) {
    options.events.emit("session.harness_id_unknown", { work_item: ref, harness: adapter.name, tmux_target: session.tmuxTarget, error });
    return session.harnessSessionId;
  }
  const id = learned;
  await options.registry.update(ref, (current) => (sameLiveSession(current, session) ? { ...current, harnessSessionId: id } : undefined));
  return id;
}
