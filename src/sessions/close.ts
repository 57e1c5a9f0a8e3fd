import type { RoutingConfig } from "../config/schema.js";
import type { ControlStore } from "../control/store.js";
import type { ControlRecord } from "../control/types.js";
import type { EventSink } from "../events/log.js";
import { messageOf } from "../errors.js";
import type { SessionRunner } from "../harness/runner.js";
import type { WorkspaceProvider } from "../workspace/provider.js";
import type { SessionRecord } from "../registry/record.js";
import type { SessionRegistry } from "../registry/registry.js";

export interface CloseOptions {
  readonly registry: SessionRegistry;
  readonly runner: SessionRunner;
  readonly tmux: RoutingConfig["tmux"];
  readonly events: EventSink;
  readonly now: () => Date;
  /** Releases a closed session's checkout (it applies routing.workspace.keepCheckoutOnClose itself). */
  readonly workspaces?: WorkspaceProvider;
  /**
   * The control records: a session that ends for a reason other than a stop (its item closed,
   * `the-loop sessions close`) clears the item's standing command, so a reopened item waits for
   * a new start instead of starting on the old one.
   */
  readonly control?: ControlStore;
}

/**
 * Close reasons that leave the item's control record standing: a stop is itself the record (the
 * item stays stopped), a failed spawn keeps the honoured start pending for the next try, and a
 * launch a lifecycle hook refused is followed by the hook's own record, which disarms the item.
 */
const KEEPS_CONTROL: ReadonlySet<string> = new Set(["stopped", "spawn-failed", "hook-refused"]);

/**
 * The one close path, shared by the dispatcher (the work item closed, a stop command) and the
 * CLI: the record is marked closed first, so no event can reach the session any more, then the
 * harness is ended and the tmux session kept or killed as configured, and last its checkout
 * released. Returns undefined when nothing was live.
 *
 * A close that clears the item's command marks the record inside the item's control lock (the
 * lock order is control, then registry), noting the command that stands at that moment: that one
 * is what the close ends. Ending the harness and removing a checkout take seconds, and a command
 * given meanwhile (a pause or a stop, recorded as the item's state now that it has no session; a
 * start that spawns afresh) is the item's next state, not this session's: it is not cleared.
 */
export async function closeSession(
  options: CloseOptions,
  ref: string,
  reason: string,
): Promise<SessionRecord | undefined> {
  const control = KEEPS_CONTROL.has(reason) ? undefined : options.control;
  if (control === undefined) {
    const closed = await options.registry.close(ref, reason, options.now());
    if (!closed) return undefined;
    await finishClose(options, closed, reason);
    return closed;
  }
  let standing: Standing = { known: false };
  const closed = await control.transaction(ref, async (tx) => {
    try {
      standing = { known: true, record: tx.read() };
    } catch {
      // A damaged record must not keep the session open: it is closed, and the clear below
      // reports the file (as it always has).
      standing = { known: false };
    }
    return options.registry.close(ref, reason, options.now());
  });
  if (!closed) return undefined;
  await finishClose(options, closed, reason, standing);
  return closed;
}

/** The item's command when its session was marked closed; `known: false` when it could not be read. */
export type Standing = { readonly known: true; readonly record: ControlRecord | undefined } | { readonly known: false };

/**
 * Everything closeSession does after marking the record: for a caller that marks it itself
 * (`registry.close`) inside a lock of its own — the stop command marks it inside the item's
 * control transaction, so a concurrent start from another process cannot interleave — and
 * finishes outside it. `closed` is what `registry.close` returned; `standing`, the item's command
 * at that moment when the caller read it (then only that command is cleared).
 */
export async function finishClose(
  options: CloseOptions,
  closed: SessionRecord,
  reason: string,
  standing: Standing = { known: false },
): Promise<void> {
  const ref = closed.workItem.ref;
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
  if (options.control !== undefined && !KEEPS_CONTROL.has(reason)) {
    // No command stood when the session closed: one recorded since is the item's next state.
    if (standing.known && standing.record === undefined) return;
    // Last, after the session is fully closed. A damaged control record throws here: the session
    // is closed all the same, and the error names the file to repair.
    const cleared = await options.control.clear(ref, reason, options.now(), standing.known ? standing.record : undefined);
    if (cleared !== undefined) options.events.emit("control.cleared", { work_item: ref, command: cleared.command, cleared_by: reason });
  }
}
