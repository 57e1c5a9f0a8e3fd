/**
 * The SDK's surface for the rest of the-loop (hook authors import `the-loop/sdk/hooks`): what other
 * folders may import (docs/architecture.md, "Floors"). Importers name the module itself, so a
 * command loads only what it runs; this file is the list the layering rule reads.
 */
export { isLifecycleHooksClass, LIFECYCLE_HOOKS_BRAND } from "./hooks/base.js";
export { lifecyclePoint } from "./hooks/catalog.js";
export type { ContextOf, DecisionSpec, FieldKind, FieldSpec, HookPoint, JsonObject, LifecyclePointName, WorkItemEntity } from "./hooks/catalog.js";
export { LOCAL_NETWORK_PARTICIPATION, LOOP_CONTEXT_FIELDS, loopPoint } from "./hooks/loop-catalog.js";
export type { LoopDecidingPointName, LoopPayloadOf, LoopPoint, LoopPointName } from "./hooks/loop-catalog.js";
export { HOOK_FAMILIES, HOOK_POINT_NAMES, HOOK_POINTS, pointsOfFamily } from "./hooks/points.js";
export type { HookFamily } from "./hooks/points.js";
export { LOOP_POINTS } from "./hooks/loop-catalog.js";
export type { JsonValue } from "./hooks/catalog.js";
export type { Mapped } from "./hooks/loop-vocabulary.js";
export { aghActorKind, aghAttemptStatus, aghCause, aghDecision, aghLoopStatus, aghOriginKind, aghRunKind } from "./hooks/loop-vocabulary.js";
