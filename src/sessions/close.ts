import type { RoutingConfig } from "../config/schema.js";
import type { ControlStore } from "../control/store.js";
import type { ControlRecord } from "../control/types.js";
import type { EventSink } from "../events/log.js";
import { messageOf } from "../errors.js";
import type { SessionRunner } from "../harness/runner.js";
import type { WorkspaceProvider } from "../workspace/provider.js";
import { RegistryRecordError, tmuxTargetFor } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";
import type { SessionRegistry } from "../registry/registry.js";
import { parseWorkItemRef, workItemSlug } from "../workitem/index.js";

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
  /**
   * The state root's tag (stateRootTag): with a damaged record, the tmux name the item's session
   * has is worked out from it (closeDamaged).
   */
  readonly stateRootTag?: string;
}

/**
 * What a close of a session whose record did not parse answers: no record (it is moved aside),
 * the item and the tmux session(s) it ended.
 */
export interface DamagedClose {
  readonly damaged: true;
  readonly workItem: { readonly ref: string };
  /** The first tmux name ended, or the name the session would have when none existed. */
  readonly tmuxTarget: string;
  readonly movedTo: string | undefined;
}

export function isDamagedClose(closed: SessionRecord | DamagedClose): closed is DamagedClose {
  return "damaged" in closed;
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
export async function closeSession(options: CloseOptions, ref: string, reason: string): Promise<SessionRecord | DamagedClose | undefined> {
  const control = KEEPS_CONTROL.has(reason) ? undefined : options.control;
  if (control === undefined) {
    const closed = await markClosed(options, ref, reason);
    if (!closed) return undefined;
    if (closed instanceof RegistryRecordError) return closeDamaged(options, ref, reason, closed);
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
    return markClosed(options, ref, reason);
  });
  if (!closed) return undefined;
  if (closed instanceof RegistryRecordError) return closeDamaged(options, ref, reason, closed, standing);
  await finishClose(options, closed, reason, standing);
  return closed;
}

/** registry.close, answering (not throwing) the error of a session record that does not parse. */
async function markClosed(options: CloseOptions, ref: string, reason: string): Promise<SessionRecord | RegistryRecordError | undefined> {
  try {
    return await options.registry.close(ref, reason, options.now());
  } catch (error) {
    if (error instanceof RegistryRecordError) return error;
    throw error;
  }
}

/**
 * The close of a session whose record does not parse: nothing in it can be trusted, so the file
 * is moved aside (kept with its name and the time, never deleted) and recorded, and the tmux
 * session the item's session would have is ended by name — the tagged name and the older
 * untagged one, each that exists. Then it finishes as any close: `session.closed`, and the item's
 * standing command cleared as the reason says. Only a close does this: a delivery into a damaged
 * record still fails (and names the file) rather than start a second session beside the first.
 */
export async function closeDamaged(
  options: CloseOptions,
  ref: string,
  reason: string,
  error: RegistryRecordError,
  standing: Standing = { known: false },
): Promise<DamagedClose> {
  const movedTo = await options.registry.moveAside(ref, "damaged");
  options.events.emit("session.record_moved_aside", {
    work_item: ref,
    file: error.where,
    moved_to: movedTo ?? "",
    reason: error.reason,
  });
  const slug = workItemSlug(parseWorkItemRef(ref));
  const names = [...(options.stateRootTag !== undefined ? [tmuxTargetFor(slug, options.stateRootTag)] : []), tmuxTargetFor(slug)];
  let ended: string | undefined;
  let keptSession = false;
  for (const target of names) {
    if ((await options.runner.probe(target)) === "absent") continue;
    const result = await options.runner.terminate(target, {
      killHarness: options.tmux.killHarnessOnClose,
      graceMs: Math.round(options.tmux.harnessKillGraceSeconds * 1000),
      killSession: !options.tmux.keepSessionOnClose,
    });
    if (result.signal !== "none") {
      options.events.emit("session.harness_terminated", { work_item: ref, tmux_target: target, signal: result.signal });
    }
    ended ??= target;
    keptSession ||= result.keptSession;
  }
  const tmuxTarget = ended ?? names[0] ?? tmuxTargetFor(slug);
  options.events.emit("session.closed", { work_item: ref, reason, tmux_target: tmuxTarget, kept_tmux_session: keptSession });
  await clearControl(options, ref, reason, standing);
  return { damaged: true, workItem: { ref }, tmuxTarget, movedTo };
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
export async function finishClose(options: CloseOptions, closed: SessionRecord, reason: string, standing: Standing = { known: false }): Promise<void> {
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
  await clearControl(options, ref, reason, standing);
}

/** The item's standing command, cleared once its session is fully closed (unless the reason keeps it). */
async function clearControl(options: CloseOptions, ref: string, reason: string, standing: Standing): Promise<void> {
  if (options.control !== undefined && !KEEPS_CONTROL.has(reason)) {
    // No command stood when the session closed: one recorded since is the item's next state.
    if (standing.known && standing.record === undefined) return;
    // Last, after the session is fully closed. A damaged control record throws here: the session
    // is closed all the same, and the error names the file to repair.
    const cleared = await options.control.clear(ref, reason, options.now(), standing.known ? standing.record : undefined);
    if (cleared !== undefined) options.events.emit("control.cleared", { work_item: ref, command: cleared.command, cleared_by: reason });
  }
}
