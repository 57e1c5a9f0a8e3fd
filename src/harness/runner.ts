/**
 * The seam between sessions and the terminal multiplexer that hosts them. The tmux runner is the
 * production implementation; everything above it (dispatcher, CLI) talks to this interface.
 */

export type PaneState = "live" | "dead" | "absent";

export interface SpawnRequest {
  /** `loop-<root tag>-<slug>` (tmuxTargetFor), or the untagged name of an older session. */
  readonly target: string;
  readonly cwd: string;
  /** The harness argv: program first. Never a shell string. */
  readonly argv: readonly string[];
  /** Extra environment for the harness (THE_LOOP_WORK_ITEM, THE_LOOP_CLI_CONFIG, …). */
  readonly env: Readonly<Record<string, string>>;
  /**
   * The canonical work item ref the session serves, and the harness adapter's name (`claude`,
   * `codex`, …): what a sandbox around the harness is made for, and which agent config it binds
   * in. A sandboxing runner refuses a request without them.
   */
  readonly workItem?: string;
  readonly harness?: string;
}

export interface PasteOptions {
  /**
   * Matches the bottom of the screen once the harness has taken the paste in (its input box shows
   * it). When set, Enter is sent only then (or after SUBMIT_SETTLE_MS): a TUI that reads the
   * paste and the Enter in one chunk — as a busy one does — takes the Enter as part of the paste.
   */
  readonly pastedPattern?: RegExp;
  /**
   * With a pastedPattern: after Enter, the screen is read again, and while the box still shows
   * the paste Enter is pressed again (a few times, bounded). For a TUI that takes an Enter soon
   * after a paste as part of it even once the paste shows (Gemini CLI makes it a newline).
   */
  readonly submitUntilTaken?: boolean;
  /**
   * With submitUntilTaken: the harness's empty input box (its ready pattern) and its dialogs. A
   * box that shows neither the paste, nor empty, nor a dialog is hidden (Gemini CLI hides it while
   * it resumes a conversation, and shows it again holding the paste): Enter waits for it to
   * come back instead of taking the paste for submitted (see submitState).
   */
  readonly readyPattern?: RegExp;
  readonly blockedPattern?: RegExp;
  /**
   * The harness reads ESC[200~ … ESC[201~ in its input as a paste whether or not it asked for
   * bracketed paste (Gemini CLI): the-loop writes the brackets itself rather than leaving them to
   * tmux, which adds them only once the harness has turned the mode on. A harness that draws its
   * input box before it turns the mode on and reads its keys (Gemini does, and under load the gap
   * lasts seconds) would otherwise get the text as typed keys: Enters, and a `?` taken for the
   * shortcuts key.
   */
  readonly bracketItself?: boolean;
}

/**
 * What the bottom of the screen says of a paste Enter was pressed for: still `shown` in the box
 * (press Enter again), `taken` (the box is empty, or a dialog the turn opened took its place), or
 * `hidden` (no box: the harness is busy starting; wait for it to come back). Without a ready
 * pattern a box that no longer shows the paste is taken.
 */
export type SubmitState = "shown" | "taken" | "hidden";

export function submitState(
  tail: string,
  patterns: { readonly pastedPattern: RegExp; readonly readyPattern?: RegExp; readonly blockedPattern?: RegExp },
): SubmitState {
  if (patterns.blockedPattern?.test(tail)) return "taken";
  if (patterns.pastedPattern.test(tail)) return "shown";
  if (patterns.readyPattern === undefined || patterns.readyPattern.test(tail)) return "taken";
  return "hidden";
}

export interface TerminateOptions {
  /** SIGTERM the harness, then SIGKILL after graceMs. */
  readonly killHarness: boolean;
  readonly graceMs: number;
  /** Kill the tmux session itself; otherwise it stays for its transcript. */
  readonly killSession: boolean;
}

export interface TerminateResult {
  /** The last signal the harness needed: "SIGTERM", "SIGKILL", or "none" when it was not running. */
  readonly signal: "SIGTERM" | "SIGKILL" | "none";
  readonly keptSession: boolean;
}

export interface SessionRunner {
  /** Starts the harness detached. Throws TargetLiveError when a live pane already holds the target. */
  spawn(request: SpawnRequest): Promise<void>;
  /** Pastes text (bracketed) and submits it. Throws SessionMissingError when no live pane holds the target. */
  pasteText(target: string, text: string, options?: PasteOptions): Promise<void>;
  probe(target: string): Promise<PaneState>;
  /**
   * The visible screen of the target's pane, as text (no scrollback). Throws SessionMissingError
   * when no session holds the target. Optional: a runner without it gets no readiness checks.
   */
  screen?(target: string): Promise<string>;
  terminate(target: string, options: TerminateOptions): Promise<TerminateResult>;
  /**
   * How the harness of a dead pane ended (its exit status, or the signal that killed it);
   * undefined when the pane is live or gone, or the runner cannot tell. Optional.
   */
  exitOf?(target: string): Promise<PaneExit | undefined>;
  /**
   * Sends the harness's interrupt keys (`keys`, a few bytes such as ESC) as typed, not pasted:
   * what ends its current turn (docs/agents.md, "Budgets"). Throws SessionMissingError when no
   * live pane holds the target. Optional: a runner without it cannot interrupt a turn.
   */
  interrupt?(target: string, keys: string): Promise<void>;
}

/** A pane's visible screen: its size in cells, and its lines as `tmux capture-pane -p -e` prints them. */
export interface PaneView {
  readonly cols: number;
  readonly rows: number;
  readonly text: string;
}

/** A dead pane's end, as tmux records it (remain-on-exit keeps it). */
export interface PaneExit {
  readonly status?: number;
  readonly signal?: number;
}

export class TargetLiveError extends Error {
  override readonly name: string = "TargetLiveError";
  constructor(readonly target: string) {
    super(`tmux session ${target} is already running; the-loop never spawns over a live session`);
  }
}

export class SessionMissingError extends Error {
  override readonly name: string = "SessionMissingError";
  constructor(
    readonly target: string,
    readonly state: PaneState,
  ) {
    super(`no live pane in tmux session ${target} (${state})`);
  }
}

export class RunnerError extends Error {
  override readonly name: string = "RunnerError";
}

/** The harness program is not an executable where the session would look for it. */
export class ProgramNotFoundError extends Error {
  override readonly name: string = "ProgramNotFoundError";
  constructor(readonly program: string) {
    super(`"${program}" is not an executable on the session's PATH`);
  }
}
