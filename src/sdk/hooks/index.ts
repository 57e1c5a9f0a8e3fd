/**
 * `the-loop/sdk/hooks`: what a hook author needs — the base class, the contexts, the catalog of
 * points, and the server half of the remote protocol. It imports nothing of the daemon and no
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
export { LifecycleHooks, isLifecycleHooksClass } from "./base.js";
export type { HookResult, HookReturn } from "./base.js";
export { HOOK_RPC_ERRORS, MAX_BATCH_REQUESTS, handleRequest } from "./protocol.js";
export type { JsonRpcFailure, JsonRpcId, JsonRpcResponse, JsonRpcSuccess } from "./protocol.js";
export { HookServer } from "./server.js";
export type { HookServerOptions } from "./server.js";
