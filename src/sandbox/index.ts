/**
 * The session sandbox (docs/security.md): the bubblewrap plan of a session (`plan.ts`, pure), the
 * host's system layout it binds (`host.ts`), and whether bwrap works on this machine
 * (`available.ts`), and what one session's sandbox holds (`session-request.ts`, pure). It stands
 * on subprocess only; sessions/sandbox-runner.ts wraps each harness in it.
 */
export { SandboxPlanError, planBubblewrap } from "./plan.js";
export type { BindMode, SandboxBind, SandboxRequest, SystemEntry } from "./plan.js";
export { SYSTEM_DIRS, TOP_LEVEL_ENTRIES, hostSystem, rootOnlySecrets } from "./host.js";
export type { HostFs } from "./host.js";
export { bubblewrapAvailable, checkBubblewrap, forgetBubblewrapCheck } from "./available.js";
export type { BubblewrapCheck, CheckOptions } from "./available.js";
export { SANDBOX_BIN_DIR, SANDBOX_SESSION_DIR, agentConfigDirs, agentConfigPaths, nodeRoot, programRoot, sessionSandbox } from "./session-request.js";
export type { SessionSandbox, SessionSandboxFacts } from "./session-request.js";
