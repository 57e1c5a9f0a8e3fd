import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { lstat, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { join, resolve } from "node:path";
import {
  ProgramNotFoundError,
  RunnerError,
  SessionMissingError,
  TargetLiveError,
  type PasteOptions,
  type PaneExit,
  type PaneView,
  type PaneState,
  type SessionRunner,
  type SpawnRequest,
  type TerminateOptions,
  type TerminateResult,
  submitState,
} from "./runner.js";
import { findExecutable } from "./preflight.js";
import { definedEnvironment, inheritedEnvironment, isEnvName, paneEnvPlan, parseShellEnvironment } from "./pane-env.js";
import { pasteText } from "./paste-text.js";
import { screenTail } from "./screen.js";
import { zombieExit } from "./zombie-exit.js";
import { scratchFileName } from "../state/scratch.js";

export interface TmuxRunnerOptions {
  /** `tmux -L <name>`: a separate server; the default server when unset. */
  readonly socketName?: string;
  /** Keep a pane (and its transcript) after the harness exits. */
  readonly remainOnExit: boolean;
  /** Default "tmux". */
  readonly binary?: string;
  /** Bound on each tmux invocation; default 10000. */
  readonly timeoutMs?: number;
  /** Where paste files are written; default os.tmpdir(). */
  readonly tempDir?: string;
  /**
   * The environment the-loop gives every session, under each request's own `env`; this process's
   * when unset. Every tmux client the runner runs gets it in place of this process's environment
   * (with TMUX and TMUX_TMPDIR, which say which server to talk to), so a server it starts holds
   * nothing else — tmux keeps its starter's environment as the global environment every session
   * can read. A pane gets exactly this and its request's `env`, whatever server it lands on.
   */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /**
   * Variables a harness must never see, whatever environment the tmux server holds (the webhook
   * secret): the pane's command is run through `env -u NAME …`.
   */
  readonly withheldEnv?: readonly string[];
}

const TARGET_PATTERN = /^loop-[A-Za-z0-9_-]+$/;
/**
 * What tmux says when there is no server. "server exited unexpectedly" is the client's view of a
 * server that shut down mid-call because its last session just ended: no server either. So is
 * "no current target", what that server answers a `-t` in the moment between its last session
 * ending and its exit (seen about one time in five right after a kill-session).
 */
const NO_SERVER_PATTERN =
  /no server running|error connecting to .*\((No such file or directory|Connection refused)\)|server exited unexpectedly|no current target/;
/** What tmux says when the session, or the whole server, is not there. */
const ABSENT_PATTERN = new RegExp(`can't find session|${NO_SERVER_PATTERN.source}`);
const POLL_MS = 100;
/** A bracketed paste's markers, for a harness that reads them whatever its mode (PasteOptions.bracketItself). */
const PASTE_START = "\u001b[200~";
const PASTE_END = "\u001b[201~";
/** How long Enter waits for a harness to show a paste in its input box before it is sent anyway. */
const SUBMIT_SETTLE_MS = 5_000;
/** With submitUntilTaken: how long the box may still show a submitted paste before Enter is pressed again, and how often. */
const RESUBMIT_AFTER_MS = 400;
const SUBMITS_AT_MOST = 4;
/** With submitUntilTaken: how long a hidden input box (a harness resuming its conversation) is waited for to come back, in all. */
const HIDDEN_BOX_WAIT_MS = 30_000;
const SCREEN_POLL_MS = 20;
/** After SIGKILL the pane should die at once; bounded so a wedged process cannot hang a close. */
const KILL_SETTLE_MS = 2_000;

/** A failed tmux call, carrying tmux's stderr so callers can tell "not there" from real trouble. */
class TmuxCallError extends RunnerError {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/**
 * Hosts every session in tmux. Targets are always addressed exactly (`=name`): a bare `-t loop-abc`
 * prefix-matches `loop-abcdef`, and acting on a neighbour's session is the one mistake a runner
 * must never make. Window and pane targets are `=name:` because tmux resolves a colon-less window
 * target against the current session first.
 */
/** How many more times, and how far apart, a dead pane with no exit status yet is asked (exitOf): at most half a second. */
const EXIT_STATUS_LOOKS = 10;
const EXIT_STATUS_LOOK_MS = 50;

export class TmuxRunner implements SessionRunner {
  private readonly binary: string;
  private readonly timeoutMs: number;
  private readonly tempDir: string;
  /** The environment of every tmux client this runner runs (see TmuxRunnerOptions.environment). */
  private readonly clientEnv: NodeJS.ProcessEnv;
  /** Deliveries to one pane run one after another, so two events' pastes never interleave. */
  private readonly deliveries = new Map<string, Promise<void>>();

  constructor(private readonly options: TmuxRunnerOptions) {
    this.binary = options.binary ?? "tmux";
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.tempDir = resolve(options.tempDir ?? tmpdir());
    const { environment } = options;
    const locators = { TMUX: process.env.TMUX, TMUX_TMPDIR: process.env.TMUX_TMPDIR };
    this.clientEnv = environment === undefined ? process.env : { ...definedEnvironment(environment), ...definedEnvironment(locators) };
  }

  async probe(target: string): Promise<PaneState> {
    checkTarget(target);
    let output: string;
    try {
      output = await this.tmux(["list-panes", "-s", "-t", windowOf(target), "-F", "#{pane_dead}"]);
    } catch (error) {
      if (isAbsent(error)) return "absent";
      throw error;
    }
    const panes = output.split("\n").filter((line) => line !== "");
    if (panes.length === 0) return "absent";
    return panes.every((dead) => dead === "1") ? "dead" : "live";
  }

  async exitOf(target: string): Promise<PaneExit | undefined> {
    checkTarget(target);
    let dead: string | undefined;
    let status: string | undefined;
    let signal: string | undefined;
    // tmux marks a pane dead when its terminal closes, and learns the exit status only when it
    // reaps the process, a moment later (more than a second later on a loaded machine). Until then
    // the unreaped process holds its status, and the kernel tells it; failing that, tmux is asked
    // again a bounded number of times before the exit is said to be unknown.
    for (let attempt = 0; ; attempt += 1) {
      let output: string;
      try {
        output = await this.tmux(["list-panes", "-t", windowOf(target), "-F", "#{pane_dead} #{pane_dead_status} #{pane_dead_signal} #{pane_pid} #{pid}"]);
      } catch (error) {
        if (isAbsent(error)) return undefined;
        throw error;
      }
      let panePid: string | undefined;
      let serverPid: string | undefined;
      [dead, status, signal, panePid, serverPid] = (output.split("\n")[0] ?? "").split(" ");
      if (dead !== "1") return undefined;
      if ((status ?? "") !== "" || (signal ?? "") !== "") break;
      if (isDigits(panePid) && isDigits(serverPid)) {
        const unreaped = await zombieExit(Number(panePid), Number(serverPid));
        if (unreaped !== undefined) return unreaped;
      }
      if (attempt >= EXIT_STATUS_LOOKS) break;
      await delay(EXIT_STATUS_LOOK_MS);
    }
    const exit: { status?: number; signal?: number } = {};
    if (isDigits(status)) exit.status = Number(status);
    if (isDigits(signal)) exit.signal = Number(signal);
    return exit;
  }

  async spawn(request: SpawnRequest): Promise<void> {
    const { target, argv, env } = request;
    checkTarget(target);
    const cwd = resolve(request.cwd);
    // tmux quietly starts a pane elsewhere when -c names no directory; an agent must not run there.
    if (!(await stat(cwd).catch(() => undefined))?.isDirectory()) {
      throw new RunnerError(`cannot spawn ${target}: the working directory ${cwd} does not exist`);
    }
    if (argv.length === 0) throw new RunnerError(`cannot spawn ${target}: the harness argv is empty`);
    for (const name of Object.keys(env)) {
      if (!isEnvName(name)) {
        throw new RunnerError(`cannot spawn ${target}: invalid environment variable name ${JSON.stringify(name)}`);
      }
    }
    const withheld = (this.options.withheldEnv ?? []).filter(isEnvName);
    const wanted: Record<string, string> = { ...definedEnvironment(this.options.environment ?? process.env), ...env };
    for (const name of withheld) delete wanted[name];
    const program = argv[0] ?? "";
    if (!findExecutable(program, wanted.PATH ?? "", cwd)) throw new ProgramNotFoundError(program);

    const state = await this.probe(target);
    if (state === "live") throw new TargetLiveError(target);
    if (state === "dead") await this.killSession(target);

    // The session starts on an inert placeholder so remain-on-exit is in force before the harness
    // runs: a harness that exits at once would otherwise take the session (and its last words)
    // with it. Two or more argv elements make tmux exec the command instead of `sh -c` it.
    const newSession = [...["new-session", "-d", "-s", target, "-c", cwd, "-x", "220", "-y", "50"], ...["--", "tail", "-f", "/dev/null"]];
    try {
      await this.tmux(newSession).catch((error: unknown) => {
        // The server was shutting down as its last session ended; a second try starts a new one.
        if (!(error instanceof TmuxCallError && /server exited unexpectedly/.test(error.stderr))) throw error;
        return this.tmux(newSession);
      });
    } catch (error) {
      if (error instanceof TmuxCallError && /duplicate session/.test(error.stderr)) {
        if ((await this.probe(target)) === "live") throw new TargetLiveError(target);
      }
      throw error;
    }

    try {
      if (this.options.remainOnExit) await this.tmux(["set-option", "-w", "-t", windowOf(target), "remain-on-exit", "on"]);
      // The server may be one the-loop did not start (the operator's, or one an older the-loop
      // started with its whole environment): what the pane would inherit from it is read, then
      // corrected.
      const [global, session] = await Promise.all([this.tmux(["show-environment", "-g", "-s"]), this.tmux(["show-environment", "-s", "-t", `=${target}`])]);
      const plan = paneEnvPlan(inheritedEnvironment(parseShellEnvironment(global), parseShellEnvironment(session)), wanted);
      const environment = Object.entries(plan.set).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
      // Withheld by name as well, should the server have gained one since it was read.
      const unset = [...new Set([...plan.unset, ...withheld])];
      // A single-element command would go through `sh -c`, which would interpret the program name.
      const command = argv.length === 1 || unset.length > 0 ? ["env", ...unset.flatMap((name) => ["-u", name]), ...argv] : [...argv];
      // tmux gives a new pane the PATH of the client that asked for it, over any -e PATH=…, so the
      // pane's PATH travels as this client's environment instead.
      const client = wanted.PATH === undefined ? undefined : { ...this.clientEnv, PATH: wanted.PATH };
      await this.tmux(["respawn-pane", "-k", "-t", windowOf(target), "-c", cwd, ...environment, "--", ...command], client);
    } catch (error) {
      // Never leave the placeholder behind: it would probe as a live harness forever.
      await this.killSession(target).catch(() => undefined);
      throw error;
    }
  }

  async pasteText(target: string, text: string, options: PasteOptions = {}): Promise<void> {
    checkTarget(target);
    // tmux makes no buffer of an empty file, so there would be nothing to paste but a bare Enter.
    if (text === "") throw new RunnerError(`nothing to deliver to ${target}: the text is empty`);
    const previous = this.deliveries.get(target) ?? Promise.resolve();
    // The previous delivery's failure was its own caller's to report; this one waits only for its turn.
    const current = previous.catch(() => undefined).then(() => this.deliverNow(target, text, options));
    this.deliveries.set(target, current);
    const forget = (): void => {
      if (this.deliveries.get(target) === current) this.deliveries.delete(target);
    };
    current.then(forget, forget);
    return current;
  }

  private async deliverNow(target: string, text: string, options: PasteOptions): Promise<void> {
    const { pastedPattern, submitUntilTaken, bracketItself } = options;
    const state = await this.probe(target);
    if (state !== "live") throw new SessionMissingError(target, state);
    const nonce = randomBytes(8).toString("hex");
    // Named with this process as their writer, so a restart after a crash removes what it left.
    const textFile = join(this.tempDir, scratchFileName("paste", nonce));
    const submitFile = join(this.tempDir, scratchFileName("submit", nonce));
    const eventBuffer = `the-loop-evt-${nonce}`;
    const submitBuffer = `the-loop-submit-${nonce}`;
    const pane = windowOf(target);
    // The text travels through a file, never through argv, so the ";" separators below are the
    // only ones tmux sees. paste-buffer, not send-keys: tmux refuses send-keys while a read-only
    // client is attached.
    // `-p`: tmux brackets the paste when the harness asked for it; bracketItself: the file holds the brackets.
    const bracketFlag = bracketItself === true ? [] : ["-p"];
    const paste = ["load-buffer", "-b", eventBuffer, formatLiteral(textFile), ";", "paste-buffer", ...bracketFlag, "-d", "-b", eventBuffer, "-t", pane];
    const submit = ["load-buffer", "-b", submitBuffer, formatLiteral(submitFile), ";", "paste-buffer", "-d", "-b", submitBuffer, "-t", pane];
    try {
      // Cleaned here, whatever the caller passed: one ESC[201~ would end the bracketed paste and
      // turn the rest of the text into typed keys.
      // The cleaned text holds no ESC, so the only brackets in the file are these two.
      const body = bracketItself === true ? `${PASTE_START}${pasteText(text)}${PASTE_END}` : pasteText(text);
      await writeFile(textFile, body, { mode: 0o600, flag: "wx" });
      await writeFile(submitFile, "\r", { mode: 0o600, flag: "wx" });
      if (pastedPattern === undefined) {
        // One invocation, so the paste and its Enter reach the pane back to back.
        await this.tmux([...paste, ";", ...submit]);
        return;
      }
      // A TUI that reads the paste and the Enter in one chunk (it does when it is busy) takes the
      // Enter as part of the paste and leaves the text in its input box: Enter waits for the box.
      await this.tmux(paste);
      await this.awaitScreen(target, (tail) => pastedPattern.test(tail), SUBMIT_SETTLE_MS);
      await this.tmux(submit);
      if (submitUntilTaken === true) await this.resubmit(target, { ...options, pastedPattern }, submit);
    } finally {
      await Promise.all([rm(textFile, { force: true }), rm(submitFile, { force: true })]);
    }
  }

  /**
   * The harness's interrupt keys, typed into its pane: loaded from a file and pasted unbracketed,
   * as the Enter after a paste is (send-keys is refused while a read-only client is attached).
   * Only the bytes an adapter names reach this (ESC), never text from a ticket or an agent.
   */
  async interrupt(target: string, keys: string): Promise<void> {
    checkTarget(target);
    const state = await this.probe(target);
    if (state !== "live") throw new SessionMissingError(target, state);
    const nonce = randomBytes(8).toString("hex");
    const keysFile = join(this.tempDir, scratchFileName("keys", nonce));
    const buffer = `the-loop-keys-${nonce}`;
    try {
      await writeFile(keysFile, keys, { mode: 0o600, flag: "wx" });
      await this.tmux(["load-buffer", "-b", buffer, formatLiteral(keysFile), ";", "paste-buffer", "-d", "-b", buffer, "-t", windowOf(target)]);
    } finally {
      await rm(keysFile, { force: true });
    }
  }

  /**
   * Presses Enter again while the box still shows the paste, bounded. A box that is hidden (the
   * harness resuming its conversation, which it shows again holding the paste) is waited for,
   * bounded too, and never counts as taken. The text has been submitted once already, so nothing
   * here may fail the delivery.
   */
  private async resubmit(target: string, patterns: PasteOptions & { readonly pastedPattern: RegExp }, submit: readonly string[]): Promise<void> {
    const hiddenUntil = performance.now() + HIDDEN_BOX_WAIT_MS;
    const state = async (): Promise<string> => submitState(screenTail(await this.screen(target)), patterns);
    try {
      for (let submits = 1; submits < SUBMITS_AT_MOST;) {
        if (await this.awaitScreen(target, (tail) => submitState(tail, patterns) === "taken", RESUBMIT_AFTER_MS)) return;
        if ((await state()) === "hidden") {
          const back = await this.awaitScreen(target, (tail) => submitState(tail, patterns) !== "hidden", Math.max(0, hiddenUntil - performance.now()));
          if (!back) return;
          continue;
        }
        await this.tmux(submit);
        submits++;
      }
    } catch {
      // Whatever stopped the check (the pane gone, a tmux call that failed), the text went in
      // with the first Enter: failing now would have the delivery pasted a second time.
    }
  }

  /** Polls the bottom of the visible screen until `matches` holds for it, or `boundMs` passes. */
  private async awaitScreen(target: string, matches: (tail: string) => boolean, boundMs: number): Promise<boolean> {
    const deadline = performance.now() + boundMs;
    for (;;) {
      if (matches(screenTail(await this.screen(target)))) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(SCREEN_POLL_MS, left)));
    }
  }

  async terminate(target: string, options: TerminateOptions): Promise<TerminateResult> {
    checkTarget(target);
    const gone: TerminateResult = { signal: "none", keptSession: false };
    if ((await this.probe(target)) === "absent") return gone;
    // A harness killed below must leave a dead pane, not a vanished session: the transcript is
    // kept when asked, and a dead pane is how the wait below sees the exit.
    try {
      await this.tmux(["set-option", "-w", "-t", windowOf(target), "remain-on-exit", "on"]);
    } catch (error) {
      // The harness ended on its own, taking the session, since the probe.
      if (isAbsent(error)) return gone;
      throw error;
    }

    let signal: TerminateResult["signal"] = "none";
    if (options.killHarness) {
      const live = (await this.panes(target)).filter((pane) => !pane.dead).map((pane) => pane.pid);
      if (live.length > 0) {
        signal = "SIGTERM";
        for (const pid of live) signalGroup(pid, "SIGTERM");
        const survivors = await this.waitForExit(target, live, options.graceMs);
        if (survivors.length > 0) {
          signal = "SIGKILL";
          for (const pid of survivors) signalGroup(pid, "SIGKILL");
          await this.waitForExit(target, survivors, KILL_SETTLE_MS);
        }
      }
    }

    if (options.killSession) {
      await this.killSession(target);
      return { signal, keptSession: false };
    }
    return { signal, keptSession: true };
  }

  /** The pane's text, scrollback included, with wrapped lines joined. */
  async capture(target: string): Promise<string> {
    checkTarget(target);
    try {
      return await this.tmux(["capture-pane", "-p", "-J", "-S", "-", "-t", windowOf(target)]);
    } catch (error) {
      if (isAbsent(error)) throw new SessionMissingError(target, "absent");
      throw error;
    }
  }

  async screen(target: string): Promise<string> {
    checkTarget(target);
    try {
      return await this.tmux(["capture-pane", "-p", "-t", windowOf(target)]);
    } catch (error) {
      if (isAbsent(error)) throw new SessionMissingError(target, "absent");
      throw error;
    }
  }

  /**
   * The visible pane as a terminal shows it: its size, and its lines with their colours and
   * attributes as escape sequences (`capture-pane -e`), read in one tmux call. For a read-only
   * view (the dashboard's): nothing is ever sent to the pane. Throws SessionMissingError when no
   * session holds the target.
   */
  async view(target: string): Promise<PaneView> {
    checkTarget(target);
    let output: string;
    try {
      output = await this.tmux([
        "display-message",
        "-p",
        "-t",
        windowOf(target),
        "#{pane_width} #{pane_height}",
        ";",
        "capture-pane",
        "-p",
        "-e",
        "-t",
        windowOf(target),
      ]);
    } catch (error) {
      if (isAbsent(error)) throw new SessionMissingError(target, "absent");
      throw error;
    }
    const newline = output.indexOf("\n");
    const size = /^(\d+) (\d+)$/.exec(newline < 0 ? output : output.slice(0, newline));
    if (size === null) throw new RunnerError(`tmux did not say the size of ${target}'s pane`);
    return { cols: Number(size[1]), rows: Number(size[2]), text: newline < 0 ? "" : output.slice(newline + 1) };
  }

  /** The argv (binary first) that attaches a terminal to the session. */
  attachArgv(target: string, readOnly: boolean): string[] {
    checkTarget(target);
    return [this.binary, ...this.socketArgs(), "attach-session", ...(readOnly ? ["-r"] : []), "-t", `=${target}`];
  }

  /**
   * Stops the whole server and removes its socket. Only on a named socket: the default server
   * hosts the user's own sessions too.
   */
  async killServer(): Promise<void> {
    const { socketName } = this.options;
    if (socketName === undefined) {
      throw new RunnerError("refusing to kill the default tmux server; killServer needs a socketName");
    }
    try {
      await this.tmux(["kill-server"]);
    } catch (error) {
      if (!(error instanceof TmuxCallError && NO_SERVER_PATTERN.test(error.stderr))) throw error;
    }
    // tmux leaves its socket file behind; a test suite would otherwise litter /tmp/tmux-<uid>/.
    const uid = process.getuid?.();
    if (uid === undefined) return;
    const socket = join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${uid}`, socketName);
    const found = await lstat(socket).catch(() => undefined);
    if (found?.isSocket()) await rm(socket, { force: true });
  }

  private async panes(target: string): Promise<{ pid: number; dead: boolean }[]> {
    let output: string;
    try {
      output = await this.tmux(["list-panes", "-s", "-t", windowOf(target), "-F", "#{pane_pid} #{pane_dead}"]);
    } catch (error) {
      if (isAbsent(error)) return [];
      throw error;
    }
    return output
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => {
        const [pid, dead] = line.split(" ");
        return { pid: Number(pid), dead: dead === "1" };
      })
      .filter((pane) => Number.isInteger(pane.pid) && pane.pid > 0);
  }

  /** Polls until every pid has exited (or its pane is dead); returns those still running at the bound. */
  private async waitForExit(target: string, pids: readonly number[], boundMs: number): Promise<number[]> {
    const deadline = Date.now() + boundMs;
    for (;;) {
      const deadPanes = new Set((await this.panes(target)).filter((pane) => pane.dead).map((pane) => pane.pid));
      const running = pids.filter((pid) => !deadPanes.has(pid) && isRunning(pid));
      if (running.length === 0 || Date.now() >= deadline) return running;
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
    }
  }

  private async killSession(target: string): Promise<void> {
    try {
      await this.tmux(["kill-session", "-t", `=${target}`]);
    } catch (error) {
      if (!isAbsent(error)) throw error;
    }
  }

  private socketArgs(): string[] {
    return this.options.socketName === undefined ? [] : ["-L", this.options.socketName];
  }

  /**
   * Runs one tmux client with the runner's client environment, or `clientEnv` in its place (the
   * binary is then found on this process's PATH).
   */
  private tmux(args: readonly string[], clientEnv?: NodeJS.ProcessEnv): Promise<string> {
    const argv = [...this.socketArgs(), ...args];
    const env = clientEnv ?? this.clientEnv;
    // execFile looks a bare name up on the child's PATH, which the client's may not share.
    const binary = env === process.env ? this.binary : onPath(this.binary);
    return new Promise((resolve, reject) => {
      execFile(binary, argv, { timeout: this.timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: "utf8", env }, (error, stdout, stderr) => {
        if (error === null) {
          resolve(stdout);
          return;
        }
        // execFile kills the client only when it ran past the timeout.
        const detail = error.killed === true ? `timed out after ${this.timeoutMs} ms` : stderr.trim() || error.message;
        reject(new TmuxCallError(`tmux ${args[0] ?? ""} failed: ${detail}`, stderr));
      });
    });
  }
}

/** A bare program name resolved against this process's PATH; anything else as given. */
function onPath(program: string): string {
  return findExecutable(program, process.env.PATH ?? "", process.cwd()) ?? program;
}

function checkTarget(target: string): void {
  if (!TARGET_PATTERN.test(target)) {
    throw new RunnerError(`invalid tmux target ${JSON.stringify(target)}: expected loop- followed by letters, digits, '_' or '-'`);
  }
}

/** The session's current window (and so its one pane), matched exactly. */
function windowOf(target: string): string {
  return `=${target}:`;
}

function isAbsent(error: unknown): boolean {
  return error instanceof TmuxCallError && ABSENT_PATTERN.test(error.stderr);
}

/** load-buffer expands formats in its path; `##` is a literal `#`. */
function formatLiteral(path: string): string {
  return path.replaceAll("#", "##");
}

/**
 * tmux starts each pane's process as a session (and process group) leader, so the group takes
 * the harness's children with it; a plain pid is the fallback when the group is already gone.
 */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already exited: nothing left to signal.
    }
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A tmux format's number: digits only, so an empty or absent field is no number. */
function isDigits(text: string | undefined): text is string {
  return text !== undefined && /^\d+$/.test(text);
}
