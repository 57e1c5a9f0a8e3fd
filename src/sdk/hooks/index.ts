/**
 * `the-loop/sdk/hooks`: what a hook author needs — the base classes (`LifecycleHooks`, and
 * `LoopHooks` for the `loop.*` events too), the contexts and payloads, the catalog of points of
 * both families, and the server half of the remote protocol. It imports nothing of the daemon and no
 * HTTP framework: only Node's built-ins.
 */
export { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES, lifecyclePoint } from "./catalog.js";
export type {
  ContextOf,
  DecisionSpec,
  DecisionsOf,
  FieldKind,
  FieldSpec,
  HookPoint,
  InputReceivedContext,
  JsonObject,
  JsonValue,
  LifecyclePoint,
  LifecyclePointName,
  PhaseChangedContext,
  SessionSpawnContext,
  SessionSpawnedContext,
  WaitingForInputContext,
  WorkItemCompleteContext,
  WorkItemEntity,
  WorkItemStartContext,
} from "./catalog.js";
export { LOCAL_NETWORK_PARTICIPATION, LOOP_CONTEXT_FIELDS, LOOP_POINTS, LOOP_POINT_NAMES, loopPoint } from "./loop-catalog.js";
export type {
  LoopAnnotateAnswer,
  LoopAnswerOf,
  LoopDecidingPointName,
  LoopDenyAnswer,
  LoopGatePostPayload,
  LoopGatePrePayload,
  LoopGenerationPostPayload,
  LoopGenerationPrePayload,
  LoopNodeTerminalPayload,
  LoopPayloadOf,
  LoopPoint,
  LoopPointName,
  LoopPointSpec,
  LoopStartedPayload,
  LoopTerminalPayload,
} from "./loop-catalog.js";
export { HOOK_FAMILIES, HOOK_POINTS, HOOK_POINT_NAMES, hookPoint, pointsOfFamily } from "./points.js";
export type { HookFamily } from "./points.js";
export { LifecycleHooks, LoopHooks, isLifecycleHooksClass } from "./base.js";
export type { HookResult, HookReturn } from "./base.js";
export { HOOK_RPC_ERRORS, MAX_BATCH_REQUESTS, handleRequest } from "./protocol.js";
export type { JsonRpcFailure, JsonRpcId, JsonRpcResponse, JsonRpcSuccess } from "./protocol.js";
export { HookServer } from "./server.js";
export type { HookServerOptions } from "./server.js";
