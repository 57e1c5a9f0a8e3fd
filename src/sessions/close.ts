import type { RoutingConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import { messageOf } from "../errors.js";
import type { SessionRunner } from "../harness/runner.js";
import type { WorkspaceProvider } from "../workspace/provider.js";
import type { SessionRecord } from "./record.js";
import type { SessionRegistry } from "./registry.js";

export interface CloseOptions {
  readonly registry: SessionRegistry;
  readonly runner: SessionRunner;
  readonly tmux: RoutingConfig["tmux"];
  readonly events: EventSink;
  readonly now: () => Date;
  /** Releases a closed session's checkout (it applies routing.workspace.keepCheckoutOnClose itself). */
  readonly workspaces?: WorkspaceProvider;
}

/**
 * The one close path, shared by the dispatcher (the work item closed) and the CLI: the record is
 * marked closed first, so no event can reach the session any more, then the harness is ended
 * and the tmux session kept or killed as configured, and last its checkout released. Returns
 * undefined when nothing was live.
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
  // Only once the harness is gone: removing a checkout under a running agent would pull its files
  // away mid-write, so a harness left running (killHarnessOnClose off) keeps its checkout.
  if (closed.workspace !== undefined && options.workspaces !== undefined && !options.tmux.killHarnessOnClose) {
    options.events.emit("workspace.kept", { work_item: ref, checkout: closed.workspace.checkout });
  } else if (closed.workspace !== undefined && options.workspaces !== undefined) {
    try {
      await options.workspaces.release(ref, closed.workspace);
    } catch (error) {
      // release reports its own failures; this only keeps a broken provider from failing the close.
      options.events.emit("workspace.clean_failed", { work_item: ref, checkout: closed.workspace.checkout, error: messageOf(error) });
    }
  }
  options.events.emit("session.closed", {
    work_item: ref,
    reason,
    tmux_target: closed.tmuxTarget,
    kept_tmux_session: result.keptSession,
  });
  return closed;
}
