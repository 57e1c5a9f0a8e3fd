export {
  HarnessConfigError,
  harnessAdapter,
  isResumableSessionId,
  newHarnessSessionId,
  type HarnessAdapter,
  type HarnessLaunchInput,
} from "./adapters.js";
export {
  ProgramNotFoundError,
  RunnerError,
  SessionMissingError,
  TargetLiveError,
  type DeliverOptions,
  type PaneState,
  type SessionRunner,
  type SpawnRequest,
  type TerminateOptions,
  type TerminateResult,
} from "./runner.js";
export { TmuxRunner, type TmuxRunnerOptions } from "./tmux.js";
export { findExecutable } from "./preflight.js";
export { pasteText } from "./paste-text.js";
