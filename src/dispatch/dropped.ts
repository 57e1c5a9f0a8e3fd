import type { Decision } from "../routing/router.js";
import type { InboundEvent } from "../routing/inbound.js";
import { SETTLED, deliveryEvents } from "../sessions/context.js";
import type { DispatchContext, HandleResult } from "../sessions/context.js";

/** An event the router drops: its event, and for a comment naming two commands, the failure reaction. Final. */
export function dropped(ctx: Pick<DispatchContext, "options" | "react">, event: InboundEvent, decision: Decision & { action: "drop" }): HandleResult {
  if (decision.reason === "control-ambiguous") {
    // A comment naming two different commands (docs/control.md#how-a-keyword-is-recognised): nothing is executed and nothing forwarded.
    // The comment gets the failure reaction, so its author sees it was not taken and can re-state it.
    deliveryEvents(ctx.options.events, decision.workItem.ref, event.deliveryId).emit("control.ambiguous", {
      commands: [...decision.commands],
      actor: event.actor ?? undefined,
    });
    ctx.react(event, "failed");
    return SETTLED;
  }
  ctx.options.events.emit("routing.dropped", {
    reason: decision.reason,
    delivery_id: event.deliveryId,
    kind: event.kind,
    work_item: decision.workItem?.ref,
    actor: event.actor ?? undefined,
  });
  return SETTLED;
}
