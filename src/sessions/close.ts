import type { RoutingConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import type { SessionRunner } from "../harness/runner.js";
import type { SessionRecord } from "./record.js";
import type { SessionRegistry } from "./registry.js";

export interface CloseOptions {
  readonly registry: SessionRegistry;
  readonly runner: SessionRunner;
  readonly tmux: RoutingConfig["tmux"];
  readonly events: EventSink;
  readonly now: () => Date;
}

/**
 * The one close path, shared by the dispatcher (the work item closed) and the CLI: the record is
 * marked closed first, so no event can reach the session any more, then the harness is ended
 * and the tmux session kept or killed as configured. Returns undefined when nothing was live.
 */
export async function closeSession(
  options: CloseOptions,
  ref: string,
  reason: string,
): Promise<SessionRecord | undefined> {
  const closed = await options.registry.close(ref, reason, options.now());
  if (!closed) return undefined;
  const result = await options.runner.terminate(closed.tmuxTarget, {
    killHarness: options.tmux.killHarnessOnClose,
    graceMs: Math.round(options.tmux.harnessKillGraceSeconds * 1000),
    killSession: !options.tmux.keepSessionOnClose,
  });
  if (result.signal !== "none") {
    options.events.emit("session.harness_terminated", {
      work_item: ref,
      tmux_target: closed.tmuxTarget,
      signal: result.signal,
    });
  }
  options.events.emit("session.closed", {
    work_item: ref,
    reason,
    tmux_target: closed.tmuxTarget,
    kept_tmux_session: result.keptSession,
  });
  return closed;
}
