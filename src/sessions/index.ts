export { questionText } from "./announce.js";
export type { CloseOptions } from "./close.js";
export { workItemEntityOfRef } from "./lifecycle.js";
export { loadPromptTemplates, unknownPlaceholders } from "./prompts.js";
export type { PromptTemplates } from "./prompts.js";
export { CLI_ENTRY, SESSION_SOCKET_ENV, ensureSessionBin, envPatternMatches, passedEnvironment, sessionEnvironment } from "./session-env.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { closeSession } from "./close.js";
export type { CapabilityRuntime, GraphSetup } from "./context.js";
export { QUESTION_MAX, postQuestion } from "./ask.js";
export type { AskAnswer } from "./ask.js";
export { SESSION_TOKEN_ENV, checkSessionCredential } from "./credential.js";
export type { CredentialedSession } from "./credential.js";
export { REASON_MAX, boundedName } from "./names.js";
export type {
  DeliveryEvents,
  DispatchContext,
  DispatcherConfig,
  DispatcherOptions,
  HandleResult,
  Refused,
  SpawnOutcome,
  StartTrigger,
  Turn,
} from "./context.js";
export type { PoolSlot } from "./keyed-queue.js";
export {
  HELD,
  RETRY,
  SESSION_CLOSED,
  SETTLED,
  adapterOf,
  closeOptions,
  deliveryEvents,
  dispatchFailed,
  handBack,
  rememberedCommands,
  sameCommand,
  sameLiveSession,
  settle,
  startedByOtherLiveProcess,
  thisProcess,
  turnOf,
  withSlot,
} from "./context.js";
export { KeyedQueue, Semaphore } from "./keyed-queue.js";
export { Reactions } from "./reactions.js";
export { announceSpawned, atPoint, inputReceived, launchPoint, refuse, refuseLaunch, startRefusal, workItemComplete } from "./hook-points.js";
export { boundedInputText, deliveredInputKind } from "./lifecycle.js";
export { closeDamaged, finishClose, isDamagedClose } from "./close.js";
export { commentReason } from "./announce.js";
export { HARNESS_START_BOUND_MS, deliverEvent, paste, promptInput, recordLink } from "./delivery.js";
export { endIfClosed, markHarnessStarted, prepareHarness, respawn } from "./pane.js";
export type { RespawnOutcome } from "./pane.js";
export { learnHarnessSessionId } from "./harness-id.js";
export { issueCredential, issueForClaim, takeClaimedToken } from "./credential.js";
export { renderBootPrompt, renderResumeNote } from "./prompts.js";
export type { ContextNeeds } from "./context.js";
export type { PasteContext } from "./delivery.js";
export { SandboxRunner, resolveSandboxBinds } from "./sandbox-runner.js";
export type { SandboxRunnerOptions, SandboxSettings } from "./sandbox-runner.js";
