export { daemonStatus, startDaemon, stopDaemon } from "./start-stop.js";
export type { ListeningStatus, ServiceStatus } from "./start-stop.js";
export { loadCommandHooks } from "./hooks.js";
export { readLock } from "./pidfile.js";
export type { HeldLock, PidfileHolder } from "./pidfile.js";
export { tmuxRunnerFor } from "./runtime.js";
export type { Runtime, RuntimeInput } from "./runtime.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { loadDaemonHooks } from "./hooks.js";
export { holderNote } from "./pidfile.js";
export { callDaemon, callSessionSocket } from "./socket/rpc.js";
export { composeRuntime } from "./runtime.js";
export { serveDaemon } from "./serve.js";
export { statusReport } from "./status/facts.js";
export type { FleetSessions } from "./status/facts.js";
export { daemonSecretNames, receiveDaemonEnvironment, secretsInEnvironmentWarning, secretsInInitialEnvironment } from "./secret-env.js";
export { NoDaemonError } from "./socket/rpc.js";
export type { SessionCredential } from "./socket/rpc.js";
export { askAnswerSchema, claimAnswerSchema, dashboardLoginSchema, servedRefsOf, unservedReason } from "./socket/methods.js";
export { dashboardStatusFile, readDashboardStatus } from "./dashboard-status.js";
export type { DashboardStatus } from "./dashboard-status.js";
export {
  readItemUsage,
  readWhySituation,
  usageAnswerSchema,
  usageOfAnswerSchema,
  whyAnswerSchema,
  whySettingsOf,
  whySituationOf,
} from "./socket/why-situation.js";
export type { WhyAnswer } from "./socket/why-situation.js";
export { asTheDaemonRuns, readRunningConfig, runningConfigFile, unloadedSettings, writeRunningConfig } from "./running-config.js";
export type { RunningConfigRecord, UnloadedSettings } from "./running-config.js";
