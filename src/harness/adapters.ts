import { randomUUID } from "node:crypto";
import { BUILTIN_HARNESSES, type HarnessConfig, type RoutingConfig } from "../config/schema.js";
import { geminiAdapter } from "./gemini.js";
import { claudeMcpArgs } from "./mcp.js";
import { codexAdapter } from "./codex.js";
import { pasteText } from "./paste-text.js";
import type { LearnSessionIdInput } from "./session-id.js";

/**
 * Harness adapters turn "start (or resume) this conversation with this prompt" into an argv.
 * They only build arrays: the runner hands the argv to tmux without a shell, so nothing a prompt
 * contains (quotes, `$()`, `;`, placeholders) is ever interpreted.
 */

export interface HarnessLaunchInput {
  /** The conversation id the-loop assigns (and records) so a dead pane can resume it. */
  readonly sessionId: string;
  readonly prompt: string;
  /** The canonical work item ref, e.g. `local:demo#1`. */
  readonly workItem: string;
}

export interface HarnessAdapter {
  readonly name: string;
  /**
   * Whether the argv carries the prompt. A command harness whose argv has no `{prompt}` gets the
   * boot prompt as its first input instead, pasted once it is ready, like any later event.
   */
  readonly promptInArgv: { readonly fresh: boolean; readonly resume: boolean };
  /** Matches the harness's screen once it takes input; undefined: wait the startup grace instead. */
  readonly readyPattern?: RegExp;
  /**
   * Matches a screen on which a paste would answer a question rather than reach the agent (a
   * dialog, a permission prompt): input waits while it shows.
   */
  readonly blockedPattern?: RegExp;
  /** Matches the bottom of the screen once a paste sits in the input box; Enter waits for it. */
  readonly pastedPattern?: RegExp;
  /** Enter is pressed again while the box still shows the paste (see PasteOptions.submitUntilTaken). */
  readonly submitUntilTaken?: boolean;
  /** the-loop brackets each paste itself: the harness reads the markers whatever its mode (see PasteOptions.bracketItself). */
  readonly bracketItself?: boolean;
  /**
   * The keys that end the agent's current turn, as its own screen names them ("esc to
   * interrupt"): sent when a budget's limit is reached. Undefined: no documented interrupt, and
   * the item is paused without one.
   */
  readonly interruptKeys?: string;
  /** Starts a new conversation. */
  fresh(input: HarnessLaunchInput): string[];
  /** Continues the conversation `input.sessionId`; absent when the harness cannot resume one. */
  resume?(input: HarnessLaunchInput): string[];
  /**
   * For a harness that picks its conversation's id itself (Codex): the id of the one just
   * started, once it is known, to record on the session for a later `resume`. Undefined when it
   * could not be told; the id the-loop assigned stays then.
   */
  learnSessionId?(input: LearnSessionIdInput): Promise<string | undefined>;
}

export class HarnessConfigError extends Error {
  override readonly name: string = "HarnessConfigError";
}

export function newHarnessSessionId(): string {
  return randomUUID();
}

/**
 * Whether an id is safe to hand back to a harness on resume. Ids come from session records on
 * disk; a hand-edited record must not smuggle an option (`--foo`) or a path into the argv.
 */
export function isResumableSessionId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id);
}

/**
 * The adapter for `name`, its prompt cleaned like a paste: the prompt carries a title anyone who
 * opens an issue wrote, and a TUI draws it on the terminal, where a control sequence would act
 * (a NUL would even make the program fail to start).
 */
export function harnessAdapter(name: string, routing: RoutingConfig): HarnessAdapter {
  const adapter = rawAdapter(name, routing);
  const clean = (input: HarnessLaunchInput): HarnessLaunchInput => ({ ...input, prompt: pasteText(input.prompt) });
  const { resume } = adapter;
  return {
    ...adapter,
    fresh: (input) => adapter.fresh(clean(input)),
    ...(resume === undefined ? {} : { resume: (input: HarnessLaunchInput) => resume(clean(input)) }),
  };
}

function rawAdapter(name: string, routing: RoutingConfig): HarnessAdapter {
  const config: HarnessConfig | undefined = Object.hasOwn(routing.harnesses, name) ? routing.harnesses[name] : undefined;
  switch (name) {
    case "claude":
      return claudeAdapter(config, routing);
    case "cursor":
      return cursorAdapter(config);
    case "codex":
      return codexAdapter(config, routing);
    case "gemini":
      return geminiAdapter(config);
  }
  if (config === undefined) {
    const known = [...new Set([...BUILTIN_HARNESSES, ...Object.keys(routing.harnesses)])].join(", ");
    throw new HarnessConfigError(`unknown harness "${name}"; known: ${known} (declare it under routing.harnesses)`);
  }
  return commandAdapter(name, config);
}

/**
 * Claude Code's input box footer: "? for shortcuts" when idle, "esc to interrupt" while it works
 * (it queues what is pasted then). Neither shows while a dialog holds the screen.
 */
export const CLAUDE_READY_PATTERN = /\? for shortcuts|esc to interrupt/;
/**
 * Claude Code's dialogs (folder trust, a tool's permission prompt, an API key question) end in
 * "Enter to confirm · Esc to cancel" or "Esc to cancel"; an Enter pasted then would pick option 1.
 */
export const CLAUDE_BLOCKED_PATTERN = /Enter to confirm|Esc to cancel|Do you trust the files|trust this folder/;

/**
 * Claude Code's input box holding text: the line under the box's top rule starts with the
 * prompt sign and something after it ("❯ [Pasted text #1 +5 lines]", or the text itself).
 */
export const CLAUDE_PASTED_PATTERN = /─{8,}\n❯ \S/;

/**
 * Escape: what ends a turn in Claude Code ("esc to interrupt"), Codex ("esc to interrupt") and
 * Gemini CLI ("esc to cancel"), each as its footer says while it works. Pressed once: twice in a
 * row opens Claude Code's rewind menu.
 */
export const ESCAPE = "\u001b";

function claudeAdapter(config: HarnessConfig | undefined, routing: Pick<RoutingConfig, "mcp">): HarnessAdapter {
  const binary = config?.command ?? ["claude"];
  // the-loop's own MCP server, its tools alone pre-approved (routing.mcp.enabled), before the
  // operator's args: a repeated --allowedTools adds to the list, so theirs still count.
  const args = [...(routing.mcp.enabled ? claudeMcpArgs() : []), ...(config?.args ?? [])];
  // `--` ends the options: several of Claude Code's are variadic (--allowedTools, --add-dir,
  // --mcp-config) and would take the prompt as one more value, and a prompt starting with `-`
  // would be read as an option.
  return {
    name: "claude",
    promptInArgv: { fresh: true, resume: true },
    readyPattern: config?.readyPattern === undefined ? CLAUDE_READY_PATTERN : new RegExp(config.readyPattern),
    blockedPattern: CLAUDE_BLOCKED_PATTERN,
    pastedPattern: CLAUDE_PASTED_PATTERN,
    interruptKeys: ESCAPE,
    fresh: ({ sessionId, prompt }) => [...binary, "--session-id", sessionId, ...args, "--", prompt],
    resume: ({ sessionId, prompt }) => [...binary, "--resume", sessionId, ...args, "--", prompt],
  };
}

function cursorAdapter(config: HarnessConfig | undefined): HarnessAdapter {
  const binary = config?.command ?? ["cursor-agent"];
  const args = config?.args ?? [];
  // No resume: cursor-agent picks its own chat id and offers no way to assign one up front, so
  // the id the-loop records could never be handed back to it. A dead pane starts afresh instead.
  // No `--` either: Cursor's CLI is not published where it could be checked, so the-loop keeps
  // the argv it is known to parse — the prompt last (docs/agents.md).
  return {
    name: "cursor",
    promptInArgv: { fresh: true, resume: true },
    ...(config?.readyPattern === undefined ? {} : { readyPattern: new RegExp(config.readyPattern) }),
    fresh: ({ prompt }) => [...binary, ...args, prompt],
  };
}

function commandAdapter(name: string, config: HarnessConfig): HarnessAdapter {
  const { command, resumeCommand, args } = config;
  if (command === undefined) {
    throw new HarnessConfigError(`harness "${name}" has no command; declare one under routing.harnesses.${name}.command`);
  }
  const adapter: HarnessAdapter = {
    name,
    promptInArgv: { fresh: carriesPrompt(command), resume: resumeCommand !== undefined && carriesPrompt(resumeCommand) },
    ...(config.readyPattern === undefined ? {} : { readyPattern: new RegExp(config.readyPattern) }),
    fresh: (input) => [...substitute(command, input), ...args],
  };
  if (resumeCommand !== undefined) adapter.resume = (input) => [...substitute(resumeCommand, input), ...args];
  return adapter;
}

function carriesPrompt(template: readonly string[]): boolean {
  return template.some((element) => element.includes("{prompt}"));
}

const PLACEHOLDER = /\{(prompt|session_id|work_item)\}/g;

/**
 * One left-to-right pass with a replacer function: the inserted text is never scanned again (a
 * prompt that mentions `{session_id}` stays literal) and `$&`-style patterns in it mean nothing.
 */
function substitute(template: readonly string[], input: HarnessLaunchInput): string[] {
  const values: Record<string, string> = {
    prompt: input.prompt,
    session_id: input.sessionId,
    work_item: input.workItem,
  };
  return template.map((element) => element.replace(PLACEHOLDER, (_match, key: string) => values[key] ?? ""));
}
