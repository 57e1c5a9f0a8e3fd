/**
 * The hook engine: load the operator's `hooks:` declaration once, then run a point's chain where
 * the-loop decides what the point is about. The engine reads points only as `HookPoint` values,
 * so a family other than the lifecycle is added by adding its points.
 */
export { HookChain } from "./chain.js";
export type { HookChainOptions } from "./chain.js";
export { samplePayload } from "./sample.js";
export { HookLoadError, loadHooks, loadHooksOrNone } from "./load.js";
export type { LoadHooksOptions } from "./load.js";
export { HOOK_LOAD_FIX, checkHooksLoad } from "./probe.js";
export { HookDeclarationError, parseHookDeclaration } from "./declaration.js";
export type { DeclarationContext, HookEntry, LocalHookEntry, RemoteHookEntry, SubprocessHookEntry } from "./declaration.js";
export type { SubprocessHookRequest } from "./subprocess.js";
export type { ChainOutcome, HookContext, HookExecutor, HookKind, HookRefusal, LoopOutcome, RunOptions } from "./types.js";
