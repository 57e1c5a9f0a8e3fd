export { daemonStatus, startDaemon, stopDaemon } from "./control.js";
export type { ListeningStatus, ServiceStatus } from "./control.js";
export { loadCommandHooks } from "./hooks.js";
export { readLock } from "./pidfile.js";
export type { HeldLock, PidfileHolder } from "./pidfile.js";
export { tmuxRunnerFor } from "./runtime.js";
export type { Runtime, RuntimeInput } from "./runtime.js";
