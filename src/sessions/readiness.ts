/**
 * Whether a harness can take input now, read off its screen. A TUI such as Claude Code needs
 * seconds to start, and at times shows a dialog (folder trust, a tool's permission prompt) on
 * which a pasted Enter picks an answer. Input waits, bounded, until the screen shows the
 * harness's ready pattern and no dialog.
 *
 * Only the bottom of the screen is read: that is where a TUI keeps its input box, footer and
 * dialogs, while the text above it is the conversation — which quotes ticket text, and a ticket
 * that mentions a dialog's words must not hold up its own session.
 */
import { screenTail } from "../harness/screen.js";

export { SCREEN_TAIL_LINES, screenTail } from "../harness/screen.js";

const POLL_MS = 100;

export interface ReadinessRule {
  readonly readyPattern: RegExp;
  readonly blockedPattern?: RegExp;
}

export type ScreenState = "ready" | "blocked" | "starting";

/** A dialog wins over a ready footer: the two can share the bottom lines for a moment while a TUI redraws. */
export function judgeScreen(screen: string, rule: ReadinessRule): ScreenState {
  const tail = screenTail(screen);
  if (rule.blockedPattern?.test(tail)) return "blocked";
  return rule.readyPattern.test(tail) ? "ready" : "starting";
}

export type ReadyOutcome =
  | { readonly ready: true; readonly waitedMs: number }
  | { readonly ready: false; readonly waitedMs: number; readonly state: ScreenState; readonly tail: string };

export interface AwaitReadyInput {
  readonly rule: ReadinessRule;
  /** The visible screen; undefined when the pane is gone (the caller's delivery then finds that out). */
  readonly screen: () => Promise<string | undefined>;
  readonly boundMs: number;
  /** False once the caller should stop waiting (the dispatcher is draining). */
  readonly keepWaiting?: () => boolean;
}

/** Polls the screen until it is ready, the pane is gone, or the bound passes. */
export async function awaitReady(input: AwaitReadyInput): Promise<ReadyOutcome> {
  const started = performance.now();
  const deadline = started + input.boundMs;
  for (;;) {
    const screen = await input.screen();
    const waitedMs = Math.round(performance.now() - started);
    if (screen === undefined) return { ready: true, waitedMs };
    const state = judgeScreen(screen, input.rule);
    if (state === "ready") return { ready: true, waitedMs };
    const left = deadline - performance.now();
    if (left <= 0 || input.keepWaiting?.() === false) return { ready: false, waitedMs, state, tail: screenTail(screen) };
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
  }
}

export class HarnessNotReadyError extends Error {
  override readonly name: string = "HarnessNotReadyError";
  constructor(
    readonly target: string,
    readonly waitedMs: number,
    readonly blocked: boolean,
  ) {
    super(
      blocked
        ? `the harness in ${target} shows a dialog and took no input for ${Math.round(waitedMs / 1000)} s; nothing was pasted (attach with \`the-loop sessions attach\` to answer it)`
        : `the harness in ${target} did not become ready for input within ${Math.round(waitedMs / 1000)} s; nothing was pasted`,
    );
  }
}
