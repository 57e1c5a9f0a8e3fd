import { messageOf } from "../errors.js";
import { RegistryRecordError } from "../registry/record.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { WorkItem } from "../workitem/index.js";
import { closeSession, isDamagedClose } from "../sessions/close.js";
import { SETTLED, closeOptions, settle } from "../sessions/context.js";
import type { ContextNeeds, HandleResult, Turn } from "../sessions/context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { cancelRunOfClosedItem } from "../graph-driver/run-ends.js";
import { workItemComplete } from "../sessions/hook-points.js";
import type { PoolSlot } from "../sessions/keyed-queue.js";
import type { SessionWorkspace } from "../registry/record.js";

/**
 * What the dispatcher does when a work item closes: its session goes through the one close path
 * (close.ts), its graph run (when under way) ends `canceled`, and work_item_complete runs; with no
 * session, a checkout a failed spawn left is released.
 */

/** The router's `close`: the item's session is closed (`item-closed`) and its graph run canceled. */
export async function closeForEvent(
  ctx: PasteContext & ContextNeeds<"hooks" | "react", "control" | "graph" | "spawnCwd" | "stateRootTag" | "trackers">,
  turn: Turn,
  slot: PoolSlot,
): Promise<HandleResult> {
  const closed = await closeSession(closeOptions(ctx), turn.workItem.ref, "item-closed");
  // Before work_item_complete, so the hooks told of the closing see the run ended.
  await cancelRunOfClosedItem(ctx, turn.workItem.ref, turn.event);
  // Closed by someone else since the decision: a dropped event gets no reaction.
  if (!closed) return settle(turn, "no-session");
  ctx.react(turn.event, "started");
  // A record moved aside as damaged: nothing left to tell work_item_complete about the session.
  if (isDamagedClose(closed)) return SETTLED;
  await workItemComplete(ctx, turn, slot, closed);
  return SETTLED;
}

/**
 * A checkout prepared for a spawn whose harness then failed is left for the next attempt to
 * reuse; once the item closes there will be none, so it is released — unless something still
 * runs in the session's tmux target (a harness an earlier close left running there).
 */
export async function releaseLeftCheckout(ctx: ContextNeeds<never, "events" | "registry" | "runner" | "workspaces">, ref: string): Promise<void> {
  const { workspaces: provider, registry, runner, events } = ctx.options;
  if (provider === undefined) return;
  const record = registry.get(ref);
  const checkout = record?.workspace?.checkout;
  if (record?.status !== "closed" || record.closeReason !== "spawn-failed" || checkout === undefined) return;
  let left: SessionWorkspace | undefined;
  try {
    if ((await runner.probe(record.tmuxTarget)) === "live") return;
    // Off the record first, so the checkout is released once even if two closes race.
    await registry.update(ref, (current) => {
      if (current.status !== "closed" || current.workspace?.checkout !== checkout) return undefined;
      left = current.workspace;
      const { workspace: _released, ...rest } = current;
      return rest;
    });
  } catch (error) {
    events.emit("workspace.clean_failed", { work_item: ref, checkout, error: messageOf(error) });
    return;
  }
  if (left !== undefined) await provider.release(ref, left);
}

/**
 * The item an item's own closing would close, when what failed its routing is that item's session
 * record not parsing (RegistryRecordError). Not a pull request's closing told to a linked item:
 * that is news for a session, and news is not delivered into a record that cannot be read.
 */
export function damagedClosing(event: InboundEvent, error: unknown): WorkItem | undefined {
  if (event.kind !== "closed" || !(error instanceof RegistryRecordError)) return undefined;
  const pullRequest = event.pullRequest?.ref;
  const closing = pullRequest === undefined ? event.workItems : event.workItems.filter((item) => item.ref === pullRequest);
  return closing.find((item) => item.ref === error.item);
}
