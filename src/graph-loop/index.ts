/**
 * The loop.* family over a graph run (docs/hooks.md): the payload a loop point carries and the
 * pure plan of a move that asks the loop hooks ahead and carries out what they allow. It stands on
 * graph-run, whose moves it plans; graph-driver carries the plans out.
 */
export { loopPayload, nextLoopTimestamp } from "./payload.js";
export type { LoopSession } from "./payload.js";
export { deniedMove, HOOK_DENIED, planLoopMove, withPendingEffects } from "./plan.js";
export type { LoopAsk, LoopDenialOf, LoopMoveInput, LoopMovePlan, LoopObservedName, RunEffect } from "./plan.js";
