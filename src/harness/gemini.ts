import type { HarnessConfig } from "../config/schema.js";

/**
 * Gemini CLI (`@google/gemini-cli`, checked with 0.61.0) as a built-in harness: interactive in
 * its pane, started with the boot prompt as its first turn, under a conversation id the-loop
 * chooses, and resumed by that id after a dead pane. Its screens and their words are read off
 * the real CLI (test/integration/gemini.test.ts); docs/agents.md has the table.
 */

/**
 * The input box is on screen: its top rule, at most one mode line under it ("YOLO Ctrl+Y",
 * "Shift+Tab to accept edits"), then the prompt sign (`>`, `*` in YOLO mode, `!` in shell mode).
 * Empty, it reads "Type your message". It shows while Gemini works too, which then queues what
 * is submitted; a dialog takes its place.
 */
export const GEMINI_READY_PATTERN = /─{8,}\n(?:[^\n]*\n)? ?[>*!] |Type your message/;

/**
 * Gemini's dialogs, by the words at their bottom: a radio list's selected option ("● 1. Trust
 * folder", "● 1. Allow once"), the sign-in choice ("(Use Enter to select)", its "Terms of Services"
 * link), and the API key box
 * ("Press Enter to submit, Esc to cancel"), where a paste would be typed in as the key.
 */
export const GEMINI_BLOCKED_PATTERN = /● \d+\. |Use Enter to select|Terms of Services|Esc to cancel|Paste your API key|Do you trust the files/;

/**
 * The input box holding text: the prompt sign followed by one space and the text (or
 * "[Pasted Text: N lines]"); empty, it is followed by the placeholder's wider gap.
 */
export const GEMINI_PASTED_PATTERN = /─{8,}\n(?:[^\n]*\n)? ?[>*!] \S/;

/**
 * Approvals unless the operator chose otherwise: nobody is at the terminal to answer "Allow
 * execution of [Shell]?", and the agent's first shell command is `the-loop ask`.
 */
export const GEMINI_DEFAULT_APPROVAL = ["--approval-mode=yolo"] as const;

/** The options that set approvals; one of them in the operator's args replaces the default. */
const APPROVAL_OPTION = /^(?:--approval-mode(?:=.*)?|--yolo|-y|--yolo=.*)$/;

/** What an argv is built from (a HarnessLaunchInput; adapters.ts imports this module, not the reverse). */
interface LaunchInput {
  readonly sessionId: string;
  readonly prompt: string;
}

export function geminiAdapter(config: HarnessConfig | undefined) {
  const binary = config?.command ?? ["gemini"];
  const operatorArgs = config?.args ?? [];
  // Gemini refuses --yolo beside --approval-mode, and a second --approval-mode: the operator's wins.
  const args = operatorArgs.some((arg) => APPROVAL_OPTION.test(arg)) ? [...operatorArgs] : [...GEMINI_DEFAULT_APPROVAL, ...operatorArgs];
  // The prompt is the value of `--prompt-interactive=`, in the same argv element: yargs never
  // reads it as an option, even when it starts with `-` (after a separate `-i`, a prompt reading
  // `--version` prints the version), and it stays interactive where a positional prompt depends
  // on a TTY check.
  const prompt = (text: string): string => `--prompt-interactive=${text}`;
  return {
    name: "gemini",
    promptInArgv: { fresh: true, resume: true },
    readyPattern: config?.readyPattern === undefined ? GEMINI_READY_PATTERN : new RegExp(config.readyPattern),
    blockedPattern: GEMINI_BLOCKED_PATTERN,
    pastedPattern: GEMINI_PASTED_PATTERN,
    // An Enter that reaches Gemini within 40 ms of a paste becomes a newline in the box (its
    // guard against pasted keystrokes), and a busy Gemini draws the paste late.
    submitUntilTaken: true,
    // It draws its input box before it turns bracketed paste on and reads its keys (seconds under
    // load, after a restart most of all); its key reader takes ESC[200~ as a paste in any mode.
    bracketItself: true,
    // Escape ends a turn: its footer reads "(esc to cancel, …)" while it works.
    interruptKeys: "\u001b",
    // `--session-id` takes the id the-loop records; reusing one is refused (exit 42), so a
    // respawn resumes instead. `--resume` finds the conversation only from the folder it ran in,
    // which a respawn keeps (the record's cwd).
    fresh: ({ sessionId, prompt: text }: LaunchInput) => [...binary, `--session-id=${sessionId}`, ...args, prompt(text)],
    resume: ({ sessionId, prompt: text }: LaunchInput) => [...binary, `--resume=${sessionId}`, ...args, prompt(text)],
  };
}
