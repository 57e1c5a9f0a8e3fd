/**
 * The capabilities' public surface: what other folders may import (docs/architecture.md,
 * "Floors"). A module not named here is this folder's own. Importers name the module itself, so a
 * command loads only what it runs; this file is the list the layering rule reads.
 */
export { activeHooks, fragmentText, hookEnvelope } from "./active.js";
export type { ActiveHook } from "./active.js";
export { commandArgv, commandNames, findCommand, leadingWords, optionValue } from "./commands.js";
export { disclosureLines } from "./consent.js";
export { ConsentChangedError, consentedFile, verifyConsented } from "./consented.js";
export { commandWordsOf, decideGate, decideStepFailure, failureOf, instructionOf, pointText, readCheckOutput } from "./dispatch.js";
export type { CheckOutcome, GateHook, PointTextParts, StepHook } from "./dispatch.js";
export { CapabilityError, configValues, crossCheck, loadCapabilities, readBundle, resolveCapabilityPath } from "./load.js";
export type { CapabilityBundle, LoadedCapability } from "./load.js";
export { DEFAULT_COMMAND_TIMEOUT_MS, LOOP_POINTS } from "./manifest.js";
export type { LoopPoint } from "./manifest.js";
export { evaluatePredicate } from "./predicate.js";
export { parsePlan, resolverFor, resolveTaskContent } from "./tasks.js";
export { parseTrackerTasks, resolveTrackerTask, taskContentText } from "./tasks.js";
export type { TaskResolutionFailure } from "./tasks.js";
export { configuredHarnesses, installRefusal, loadedRuntimeCheck, runtimeHalt } from "./runtime-compat.js";
