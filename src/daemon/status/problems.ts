/**
 * What keeps a daemon from doing its job, as `the-loop status` reports it. Every check here is
 * pure: it reads facts gathered from the state root, the event log and this machine
 * (facts.ts) and answers the problems it sees, each with the fix a person can carry out.
 * A daemon is healthy only when there are none.
 */

import type { UnloadedSettings } from "../running-config.js";

/** `status` when an enabled service is not running (its problems, if any, are listed too). */
export const EXIT_STATUS_NOT_RUNNING = 1;
/** `status` when every enabled service runs (or none is enabled) but something stops the work. */
export const EXIT_STATUS_PROBLEMS = 3;

export type StatusProblemCode =
  | "service-stopped"
  | "github-token-missing"
  | "poll-source-failing"
  | "damaged-file"
  | "start-pending"
  | "hook-server-down"
  | "capability-changed"
  | "capability-runtime"
  | "self-login-unknown"
  | "sandbox-off"
  | "settings-not-loaded"
  | "notify-sink-failing"
  | "session-failed-to-start"
  | "daemon-late";

export interface StatusProblem {
  readonly code: StatusProblemCode;
  readonly message: string;
  readonly fix: string;
}

/** 0 when healthy; 1 when an enabled service does not run; 3 when everything runs but problems remain. */
export function statusExitCode(problems: readonly StatusProblem[]): number {
  if (problems.length === 0) return 0;
  return problems.some((problem) => problem.code === "service-stopped") ? EXIT_STATUS_NOT_RUNNING : EXIT_STATUS_PROBLEMS;
}

// ---- services ----------------------------------------------------------------------------

export interface ServiceFact {
  readonly name: string;
  readonly enabled: boolean;
  readonly running: boolean;
}

export function stoppedServiceProblems(services: readonly ServiceFact[], daemonLog: string): StatusProblem[] {
  return services
    .filter((service) => service.enabled && !service.running)
    .map((service) => ({
      code: "service-stopped",
      message: `${service.name} is enabled but not running`,
      fix: `start it with \`the-loop start\` (a daemon that stopped on its own said why in ${daemonLog})`,
    }));
}

// ---- the GitHub token ----------------------------------------------------------------------

export interface GitHubTokenFact {
  /** What needs a token, in words: `poll source octo/repo`, `the webhook receiver`. Empty: nothing does. */
  readonly neededBy: readonly string[];
  /** Whether the lookup the daemon makes (the token variables, then `gh auth token`) found one here. */
  readonly found: boolean;
  /** integrations.github.tokenEnv. */
  readonly tokenEnv: readonly string[];
  /** The GitHub host the token is for (`gh auth login --hostname` when not github.com). */
  readonly host: string;
  /**
   * The running daemon's last poll cycle read its GitHub sources without an error: it has a token
   * of its own, whatever this shell's environment holds.
   */
  readonly daemonReachedGitHub: boolean;
}

export function githubTokenProblem(fact: GitHubTokenFact): StatusProblem | undefined {
  if (fact.neededBy.length === 0 || fact.found || fact.daemonReachedGitHub) return undefined;
  const [first = "GH_TOKEN", ...rest] = fact.tokenEnv;
  const variables = [first, ...rest].join(", ");
  const others = rest.length > 0 ? ` (or ${rest.join(", or ")})` : "";
  const login = fact.host !== "github.com" ? `gh auth login --hostname ${fact.host}` : "gh auth login";
  return {
    code: "github-token-missing",
    message: `no GitHub token for ${fact.neededBy.join(" and ")}: ${variables} ${rest.length > 0 ? "are" : "is"} not set and \`gh auth token\` gives none`,
    fix:
      `set ${first}${others}, or log in with \`${login}\`; then restart the daemon from that shell ` +
      "(`the-loop stop`, `the-loop start`): it keeps the environment it was started in",
  };
}

// ---- poll sources ----------------------------------------------------------------------------

/** One poll cycle as the event log tells it: the sources that reported an error in it. */
export interface PollCycle {
  /** When the cycle ended (its `poll.cycle` event). */
  readonly at: string;
  /** Source key → the last error it reported in the cycle. `*` is the poller itself. */
  readonly failures: ReadonlyMap<string, string>;
}

/** The event fields the cycle and spawn checks read. */
export interface LoggedEvent {
  readonly ts: string;
  readonly event: string;
  readonly pid?: number;
  readonly [field: string]: unknown;
}

/**
 * The cycles of the poller `pid` in event order: each `poll.provider_error` belongs to the cycle
 * whose `poll.cycle` comes next. Events of other processes (an earlier daemon) are not its cycles.
 */
export function pollCyclesOf(events: readonly LoggedEvent[], pid: number): PollCycle[] {
  const cycles: PollCycle[] = [];
  let failures = new Map<string, string>();
  for (const event of events) {
    if (event.pid !== pid) continue;
    if (event.event === "poll.provider_error") {
      const source = typeof event.poll_source === "string" ? event.poll_source : "*";
      failures.set(source, typeof event.error === "string" ? event.error : "an error");
    } else if (event.event === "poll.cycle") {
      cycles.push({ at: event.ts, failures });
      failures = new Map();
    }
  }
  return cycles;
}

/** How many cycles in a row a source must fail before status calls it failing. */
export const FAILING_CYCLES = 3;

/** The sources that reported an error in each of the last `window` cycles (none before that many cycles ran). */
export function failingSourceProblems(cycles: readonly PollCycle[], window = FAILING_CYCLES): StatusProblem[] {
  if (cycles.length < window) return [];
  const recent = cycles.slice(-window);
  const last = recent[recent.length - 1];
  if (last === undefined) return [];
  const problems: StatusProblem[] = [];
  for (const [source, error] of last.failures) {
    if (!recent.every((cycle) => cycle.failures.has(source))) continue;
    const what = source === "*" ? "the poller" : `poll source ${source}`;
    problems.push({
      code: "poll-source-failing",
      message: `${what} failed in each of the last ${window} cycles (last at ${last.at}): ${error}`,
      fix: "fix what the error names; `the-loop events --type poll.provider_error` shows every failure",
    });
  }
  return problems;
}

// ---- damaged files ---------------------------------------------------------------------------

export interface DamagedFile {
  /** What the file should hold: `session record`, `control record`, `local tracker journal`. */
  readonly kind: string;
  readonly file: string;
  readonly reason: string;
  /** What the kind's own error tells the operator to do. */
  readonly remedy: string;
}

export function damagedFileProblems(files: readonly DamagedFile[]): StatusProblem[] {
  return files.map((file) => ({
    code: "damaged-file",
    message: `${file.kind} ${file.file} is damaged: ${file.reason}`,
    fix: file.remedy,
  }));
}

// ---- pending starts --------------------------------------------------------------------------

export interface PendingStart {
  readonly ref: string;
  /** When the start was requested: only failures since count. */
  readonly requestedAt: string;
}

export interface SpawnFailure {
  readonly ref: string;
  readonly at: string;
  readonly error: string;
}

/** Spawn failures since its request after which a pending start is reported. */
export const REPEATED_SPAWN_FAILURES = 2;

/** Starts that stand (`start-pending`) after their spawn failed repeatedly since they were asked for. */
export function pendingStartProblems(pending: readonly PendingStart[], failures: readonly SpawnFailure[], repeated = REPEATED_SPAWN_FAILURES): StatusProblem[] {
  const problems: StatusProblem[] = [];
  for (const start of pending) {
    const since = Date.parse(start.requestedAt);
    const own = failures.filter((failure) => failure.ref === start.ref && !(Date.parse(failure.at) < since));
    const last = own[own.length - 1];
    if (own.length < repeated || last === undefined) continue;
    problems.push({
      code: "start-pending",
      message: `the start of ${start.ref} (asked for at ${start.requestedAt}) is pending: its session failed to spawn ${own.length} times, last at ${last.at}: ${last.error}`,
      fix:
        `fix what the error names; the item's next event or the next \`the-loop start\` tries again, ` +
        `and \`the-loop sessions stop --work-item ${start.ref}\` withdraws the start`,
    });
  }
  return problems;
}

/** A session whose harness kept dying (status `failed`, routing.supervision). */
export interface FailedSession {
  readonly ref: string;
  readonly at: string;
  readonly reason: string;
}

/** Each session that failed to start, with how to see why and how to go on. */
export function failedSessionProblems(failed: readonly FailedSession[]): StatusProblem[] {
  return failed.map((session) => ({
    code: "session-failed-to-start",
    message: `the session of ${session.ref} failed to start at ${session.at}: ${session.reason}`,
    fix:
      `read the harness's last words with \`the-loop sessions attach --work-item ${session.ref}\` and fix their cause (the agent CLI's install, its config or its credentials); ` +
      `then \`the-loop sessions start --work-item ${session.ref}\` begins a new session, or \`the-loop sessions close --work-item ${session.ref}\` lays this one to rest`,
  }));
}

// ---- required remote hooks -------------------------------------------------------------------

export interface HookProbe {
  readonly name: string;
  /** The server's origin (`https://hooks.example.com:8443`): never the path or a token. */
  readonly origin: string;
  /** Why it did not answer; undefined when it did. */
  readonly error?: string;
}

export function hookServerProblems(probes: readonly HookProbe[]): StatusProblem[] {
  return probes.flatMap((probe): StatusProblem[] =>
    probe.error === undefined
      ? []
      : [
          {
            code: "hook-server-down",
            message: `the required hook "${probe.name}" does not answer at ${probe.origin}: ${probe.error}`,
            fix:
              `start its server (every operation the hook guards is refused until it answers), ` +
              `or set \`required: false\` (or \`enabled: false\`) on the hooks entry "${probe.name}"`,
          },
        ],
  );
}

// ---- capabilities changed since consent ------------------------------------------------------

/** A `capability.use_refused` of the running daemon: a bundle file it did not use, for it changed since consent. */
export interface CapabilityRefusal {
  readonly at: string;
  readonly capability: string;
  /** The bundle's folder. */
  readonly path: string;
  readonly workItem: string;
  readonly reason: string;
}

/** One problem per capability whose bundle the running daemon refused to use (its last refusal named). */
export function capabilityChangedProblems(refusals: readonly CapabilityRefusal[]): StatusProblem[] {
  const last = new Map<string, { refusal: CapabilityRefusal; count: number }>();
  for (const refusal of refusals) last.set(refusal.capability, { refusal, count: (last.get(refusal.capability)?.count ?? 0) + 1 });
  return [...last.values()].map(({ refusal, count }) => ({
    code: "capability-changed",
    message: `capability "${refusal.capability}" (${refusal.path}) changed since it was consented to: the daemon refused to use it ${count === 1 ? "once" : `${count} times`}, last at ${refusal.at} for ${refusal.workItem}, and blocked the item there`,
    fix:
      `read what changed in ${refusal.path}; consent again with \`the-loop capabilities add ${JSON.stringify(refusal.path)} --yes\` (or put the files back), ` +
      "restart the daemon (`the-loop stop && the-loop start`), and resume the item with `the-loop graph force`",
  }));
}

// ---- capabilities left without a harness by a reload ------------------------------------------

/** A `capability.runtime_unsupported` of the running daemon since its last config reload. */
export interface CapabilityRuntimeFact {
  readonly at: string;
  readonly capability: string;
  readonly harnesses: readonly string[];
  readonly reason: string;
}

/**
 * The capabilities the running daemon found, at its last config reload, to support none of the
 * harnesses the config runs: each reload reads them all again after its `config.reloaded`, so
 * only what was said after the last one of the process still holds.
 */
export function capabilityRuntimeOf(events: readonly LoggedEvent[], pids: ReadonlySet<number>): CapabilityRuntimeFact[] {
  const current = new Map<number, CapabilityRuntimeFact[]>();
  for (const event of events) {
    if (event.pid === undefined || !pids.has(event.pid)) continue;
    if (event.event === "config.reloaded") current.set(event.pid, []);
    else if (event.event === "capability.runtime_unsupported") {
      const harnesses = Array.isArray(event.harnesses) ? event.harnesses.filter((name): name is string => typeof name === "string") : [];
      const fact = {
        at: event.ts,
        capability: typeof event.id === "string" ? event.id : "?",
        harnesses,
        reason: typeof event.reason === "string" ? event.reason : "",
      };
      current.set(event.pid, [...(current.get(event.pid) ?? []), fact]);
    }
  }
  return [...current.values()].flat();
}

/** One problem per capability a reload left supporting none of the config's harnesses. */
export function capabilityRuntimeProblems(facts: readonly CapabilityRuntimeFact[]): StatusProblem[] {
  return facts.map((fact) => ({
    code: "capability-runtime",
    message:
      `capability "${fact.capability}" supports none of the harnesses the config runs sessions in since the reload at ${fact.at} (${fact.harnesses.join(", ")}): ` +
      "every item whose session reaches one of its points is blocked there (reason code capability-runtime)",
    fix:
      "declare a harness it supports under routing.harnesses and choose it (routing.defaultHarness, routing.harnessByLabel, or `sessions start --agent NAME`): " +
      "the daemon reloads the config by itself; or remove its entry from `capabilities:` and restart the daemon (`the-loop stop`, `the-loop start`)",
  }));
}

// ---- the login the-loop posts as ------------------------------------------------------------

/** The running daemon's lookup of the login its token posts as, failed for good (GitHub's 401 or 403). */
export interface SelfLoginFailure {
  readonly at: string;
  readonly reason: string;
  readonly fix: string;
}

/**
 * The newest word of the processes `pids` on the login: a permanent failure, unless a lookup
 * succeeded since (graph.self_login_learned). A transient failure is not a problem: the daemon asks again.
 */
export function selfLoginFailureOf(events: readonly LoggedEvent[], pids: ReadonlySet<number>): SelfLoginFailure | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event === undefined || event.pid === undefined || !pids.has(event.pid)) continue;
    if (event.event === "graph.self_login_learned") return undefined;
    if (event.event !== "graph.self_login_unknown") continue;
    if (event.permanent !== true) return undefined;
    const text = (key: string): string => (typeof event[key] === "string" ? (event[key] as string) : "?");
    return { at: event.ts, reason: text("reason"), fix: text("fix") };
  }
  return undefined;
}

export function selfLoginProblem(failure: SelfLoginFailure): StatusProblem {
  return {
    code: "self-login-unknown",
    message: `the daemon cannot learn the login its token posts as (last at ${failure.at}: ${failure.reason}), so every gate answer is refused: it cannot tell a person's from its own agent's`,
    fix: failure.fix,
  };
}

// ---- the sessions' sandbox ---------------------------------------------------------------------

export interface SandboxFact {
  readonly mode: "auto" | "bubblewrap" | "none";
  /** Why bwrap does not work here; undefined where it does (or was not asked: mode none). */
  readonly unavailable?: string | undefined;
}

/** A session that would run without its sandbox, or not at all for want of one (docs/security.md). */
export function sandboxProblem(fact: SandboxFact): StatusProblem | undefined {
  const restart = "then restart the daemon: `the-loop stop && the-loop start`";
  if (fact.mode === "none") {
    return {
      code: "sandbox-off",
      message:
        "routing.sandbox.mode is none: each session's agent runs with everything this OS user reaches — the daemon's secrets, the state root, every other item's folder, the home",
      fix: `set routing.sandbox.mode: auto (a bubblewrap sandbox per session where it works here), ${restart}`,
    };
  }
  if (fact.unavailable === undefined) return undefined;
  if (fact.mode === "bubblewrap") {
    return {
      code: "sandbox-off",
      message: `no session can start: routing.sandbox.mode is bubblewrap, and ${fact.unavailable}`,
      fix: "make bubblewrap work here (Debian/Ubuntu: apt-get install bubblewrap), or set routing.sandbox.mode: none to run sessions unsandboxed",
    };
  }
  return {
    code: "sandbox-off",
    message: `sessions start without a sandbox (routing.sandbox.mode: auto), because ${fact.unavailable}`,
    fix: `make bubblewrap work here (Debian/Ubuntu: apt-get install bubblewrap); a session started since runs sandboxed at its next start, no restart needed`,
  };
}

// ---- settings changed on disk, not loaded ------------------------------------------------------

/**
 * The config file says one thing and the running daemon runs another: each setting it has not
 * loaded, by name, with how it is loaded — a restart, or (for the keys a reload applies) the
 * reload the daemon makes by itself, which a file it cannot read keeps from happening.
 */
export function unloadedSettingsProblems(fact: UnloadedSettings | undefined, daemonLog: string): StatusProblem[] {
  if (fact === undefined) return [];
  const problems: StatusProblem[] = [];
  const list = (keys: readonly string[]): string => keys.join(", ");
  if (fact.restartRequired.length > 0) {
    const one = fact.restartRequired.length === 1;
    problems.push({
      code: "settings-not-loaded",
      message: `the config file changed ${list(fact.restartRequired)}, which the running daemon (pid ${fact.pid}) has not loaded: ${one ? "it takes" : "they take"} effect only at a start, and until then the daemon, and every command that acts through it, runs the value${one ? "" : "s"} it started with`,
      fix: "restart the daemon to run the file as it is: `the-loop stop && the-loop start`",
    });
  }
  if (fact.reloads.length > 0) {
    problems.push({
      code: "settings-not-loaded",
      message: `the config file changed ${list(fact.reloads)}, which the running daemon (pid ${fact.pid}) reloads by itself and has not loaded yet`,
      fix: `run \`the-loop status\` again in a few seconds; if it stays, the daemon could not use the file (config.reload_failed in ${daemonLog} says why): fix it and save it again`,
    });
  }
  return problems;
}

// ---- all together ----------------------------------------------------------------------------

export interface StatusFacts {
  readonly services: readonly ServiceFact[];
  readonly daemonLog: string;
  readonly token: GitHubTokenFact;
  /** The running poller's cycles (empty when it does not run). */
  readonly cycles: readonly PollCycle[];
  readonly damaged: readonly DamagedFile[];
  readonly pending: readonly PendingStart[];
  /** Sessions that failed to start (status `failed`). */
  readonly failed?: readonly FailedSession[];
  readonly spawnFailures: readonly SpawnFailure[];
  readonly hooks: readonly HookProbe[];
  /** The running daemon's refusals of changed capability bundles. */
  readonly capabilityRefusals?: readonly CapabilityRefusal[];
  /** The capabilities the running daemon's last config reload left supporting none of its harnesses. */
  readonly capabilityRuntimes?: readonly CapabilityRuntimeFact[];
  /** The running daemon's permanent failure to learn its own login. */
  readonly selfLoginFailure?: SelfLoginFailure | undefined;
  readonly sandbox?: SandboxFact;
  /** What the config file changed that the running daemon has not loaded. */
  readonly unloaded?: UnloadedSettings | undefined;
}

/** Every problem, most basic first: a stopped service, then what a running one cannot do. */
export function statusProblems(facts: StatusFacts): StatusProblem[] {
  const token = githubTokenProblem(facts.token);
  // A GitHub source failing for want of a token is the token problem, said once.
  const sources = failingSourceProblems(facts.cycles).filter((problem) => token === undefined || !problem.message.includes("no GitHub token"));
  return [
    ...stoppedServiceProblems(facts.services, facts.daemonLog),
    ...unloadedSettingsProblems(facts.unloaded, facts.daemonLog),
    ...(token ? [token] : []),
    ...sources,
    ...hookServerProblems(facts.hooks),
    ...capabilityChangedProblems(facts.capabilityRefusals ?? []),
    ...capabilityRuntimeProblems(facts.capabilityRuntimes ?? []),
    ...(facts.selfLoginFailure ? [selfLoginProblem(facts.selfLoginFailure)] : []),
    ...(facts.sandbox === undefined ? [] : [sandboxProblem(facts.sandbox)].filter((problem) => problem !== undefined)),
    ...damagedFileProblems(facts.damaged),
    ...pendingStartProblems(facts.pending, facts.spawnFailures),
    ...failedSessionProblems(facts.failed ?? []),
  ];
}
