import { spawnSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { ExitError, NotFoundError, UsageError } from "../../../errors.js";
import { TmuxRunner } from "../../../harness/tmux.js";
import { openDaemonProject } from "../../context.js";
import type { GlobalOptions, Project } from "../../context.js";
import { stderr, stdout } from "../../output.js";
import { canonicalRef } from "../../canonical-ref.js";
import { fleetOf } from "./list.js";
import { recordOrFail, runtimeOf } from "./sessions.js";
import type { Placement } from "../../../fleet/index.js";

export interface SessionsAttachOptions {
  readonly workItem: string;
  readonly readOnly: boolean;
  /** Print the command that attaches (an argv array) instead of attaching. */
  readonly json?: boolean;
}

/** The label `tmux -L` takes for the server tmux uses when none is named. */
const DEFAULT_SOCKET_NAME = "default";

/** The socket of the tmux server this terminal is inside: the first field of `$TMUX` (path,pid,session). */
export function currentTmuxSocket(tmuxVariable: string | undefined): string | undefined {
  if (!tmuxVariable) return undefined;
  const comma = tmuxVariable.lastIndexOf(",", tmuxVariable.lastIndexOf(",") - 1);
  const path = comma > 0 ? tmuxVariable.slice(0, comma) : tmuxVariable;
  return path === "" ? undefined : path;
}

/**
 * Where `tmux -L name` puts its socket, as tmux resolves it: `$TMUX_TMPDIR` (else /tmp) /
 * `tmux-<uid>` / name, its folder through symlinks as tmux records it in `$TMUX`.
 */
export function socketPathOf(name: string, env: NodeJS.ProcessEnv, uid: number): string {
  const folder = join(env.TMUX_TMPDIR || "/tmp", `tmux-${uid}`);
  let real = folder;
  try {
    real = realpathSync(folder);
  } catch {
    // No such folder yet: no server runs there, and the path is compared as written.
  }
  return join(real, name);
}

/** The same socket, whichever way the two paths spell their folders. */
function sameSocket(a: string, b: string): boolean {
  const real = (path: string): string => {
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  };
  return real(a) === real(b);
}

export type AttachPlan =
  /** Not inside tmux: attach this terminal. */
  | { readonly kind: "attach" }
  /** Inside the sessions' own server: move this client over; nesting tmux in tmux is refused by tmux. */
  | { readonly kind: "switch" }
  /** Inside another server: a client cannot switch servers, so say how to attach from outside. */
  | { readonly kind: "elsewhere"; readonly current: string };

export function attachPlan(currentSocket: string | undefined, sessionsSocket: string): AttachPlan {
  if (currentSocket === undefined) return { kind: "attach" };
  return sameSocket(currentSocket, sessionsSocket) ? { kind: "switch" } : { kind: "elsewhere", current: currentSocket };
}

/** What to type in a terminal outside tmux to watch the session. */
export function outsideCommand(socketName: string | undefined, target: string, readOnly: boolean): string {
  return `tmux -L ${socketName ?? DEFAULT_SOCKET_NAME} attach${readOnly ? " -r" : ""} -t =${target}`;
}

/** The tmux command that attaches to `target` on the server of `socketName` (the default server's when none). */
export function tmuxAttachArgv(socketName: string | null | undefined, target: string, readOnly: boolean): string[] {
  return ["tmux", "-L", socketName ?? DEFAULT_SOCKET_NAME, "attach", ...(readOnly ? ["-r"] : []), "-t", `=${target}`];
}

/** The same, run on `host` over ssh (`-t`: tmux needs a terminal there). */
export function sshAttachArgv(host: string, socketName: string | null | undefined, target: string, readOnly: boolean): string[] {
  return ["ssh", "-t", host, ...tmuxAttachArgv(socketName, target, readOnly)];
}

/** An argv as one line to paste into a shell: words of safe characters as they are, any other quoted. */
export function shellLine(argv: readonly string[]): string {
  return argv.map((word) => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`)).join(" ");
}

function runTmux(argv: readonly string[], what: string): void {
  const result = spawnSync("tmux", argv, { stdio: "inherit" });
  if (result.error) throw new ExitError(`cannot run tmux: ${result.error.message}`);
  if (result.status !== 0) throw new ExitError(`tmux ${what} exited with ${result.status ?? result.signal}`);
}

/** Where the item's session runs when the state is in a database that several daemons share; undefined on files. */
async function placementOf(project: Project, ref: string): Promise<Placement | undefined> {
  const fleet = await fleetOf(project);
  return fleet?.placementOf(ref);
}

/**
 * Outside tmux, attaches this terminal. Inside the tmux server the sessions run on, switches this
 * client to the session (tmux refuses a nested attach). Inside another server, which a client
 * cannot leave for another, prints exactly what to run from outside. A session that runs on
 * another host (its item's lease is a daemon's there, state.store: postgres) cannot be attached
 * from here: the `ssh … tmux attach` that reaches it is printed instead, as an argv with --json.
 */
export async function runSessionsAttach(globals: GlobalOptions, options: SessionsAttachOptions): Promise<void> {
  const project = await openDaemonProject(globals, "sessions");
  const runtime = await runtimeOf(project);
  const ref = canonicalRef(options.workItem, project);
  const record = recordOrFail(runtime, ref);
  const target = record.tmuxTarget;
  const socketName = project.config.routing.tmux.socketName;
  const placement = await placementOf(project, ref);
  if (placement !== undefined && placement.host !== hostname()) {
    const argv = sshAttachArgv(placement.host, placement.tmuxSocket, target, options.readOnly);
    if (options.json) {
      stdout.json({ workItem: ref, tmuxTarget: target, daemon: placement.daemon, host: placement.host, here: false, command: argv });
      return;
    }
    // Not a failure, as below: the session runs, and the command that reaches it is the answer, alone on stdout.
    stderr.line(
      `${ref}'s session ${target} runs on ${placement.host} (the daemon "${placement.daemon}"), not on this host (${hostname()}); ` +
        "run this to attach to it from here:",
    );
    stdout.line(shellLine(argv));
    return;
  }
  if (options.json) {
    const argv = tmuxAttachArgv(placement?.tmuxSocket ?? socketName, target, options.readOnly);
    stdout.json({ workItem: ref, tmuxTarget: target, daemon: placement?.daemon ?? null, host: hostname(), here: true, command: argv });
    return;
  }
  const gone = (): NotFoundError => new NotFoundError(`the tmux session ${target} of ${ref} no longer exists (status ${record.status})`);
  const plan = attachPlan(currentTmuxSocket(process.env.TMUX), socketPathOf(socketName ?? DEFAULT_SOCKET_NAME, process.env, process.getuid?.() ?? 0));

  if (plan.kind === "attach") {
    if ((await runtime.runner.probe(target)) === "absent") throw gone();
    if (!process.stdin.isTTY) throw new UsageError("sessions attach needs a terminal (stdin is not a TTY)");
    const [, ...args] = runtime.runner.attachArgv(target, options.readOnly);
    runTmux(args, "attach");
    return;
  }

  const switchHere = (socketArgs: readonly string[]): void => {
    // `switch-client -r` would toggle this client's read-only flag and leave it so afterwards.
    if (options.readOnly) {
      throw new UsageError(
        `--read-only cannot switch the tmux client you are in; from a terminal outside tmux run: ${outsideCommand(socketName, target, true)}`,
      );
    }
    runTmux([...socketArgs, "switch-client", "-t", `=${target}`], "switch-client");
  };

  if (plan.kind === "switch") {
    if ((await runtime.runner.probe(target)) === "absent") throw gone();
    switchHere(socketName === undefined ? [] : ["-L", socketName]);
    return;
  }

  // Named exactly: without -L, a tmux client inside another server talks to that one.
  const sessionsServer = new TmuxRunner({ socketName: socketName ?? DEFAULT_SOCKET_NAME, remainOnExit: true });
  if ((await sessionsServer.probe(target)) !== "absent") {
    // Not a failure: the session is there, and the command that reaches it is the answer. It goes
    // to stdout alone, so `$(the-loop sessions attach …)` or a copy and paste gets just that.
    stderr.line(
      `${ref}'s session ${target} runs on another tmux server than the one this terminal is inside (${plan.current}), ` +
        "and a tmux client cannot switch servers; run this from a terminal outside tmux (or after detaching):",
    );
    stdout.line(outsideCommand(socketName, target, options.readOnly));
    return;
  }
  // With no socket configured, a daemon started inside this very tmux put its sessions here.
  if (socketName === undefined && (await runtime.runner.probe(target)) !== "absent") {
    switchHere([]);
    return;
  }
  throw gone();
}
