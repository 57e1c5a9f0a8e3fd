import { randomUUID } from "node:crypto";
import { BUILTIN_HARNESSES, type HarnessConfig, type RoutingConfig } from "../config/schema.js";

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
  /** Starts a new conversation. */
  fresh(input: HarnessLaunchInput): string[];
  /** Continues the conversation `input.sessionId`; absent when the harness cannot resume one. */
  resume?(input: HarnessLaunchInput): string[];
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

export function harnessAdapter(name: string, routing: RoutingConfig): HarnessAdapter {
  const config: HarnessConfig | undefined = Object.hasOwn(routing.harnesses, name) ? routing.harnesses[name] : undefined;
  switch (name) {
    case "claude":
      return claudeAdapter(config);
    case "cursor":
      return cursorAdapter(config);
  }
  if (config === undefined) {
    const known = [...new Set([...BUILTIN_HARNESSES, ...Object.keys(routing.harnesses)])].join(", ");
    throw new HarnessConfigError(`unknown harness "${name}"; known: ${known} (declare it under routing.harnesses)`);
  }
  return commandAdapter(name, config);
}

function claudeAdapter(config: HarnessConfig | undefined): HarnessAdapter {
  const binary = config?.command ?? ["claude"];
  const args = config?.args ?? [];
  return {
    name: "claude",
    fresh: ({ sessionId, prompt }) => [...binary, "--session-id", sessionId, ...args, prompt],
    resume: ({ sessionId, prompt }) => [...binary, "--resume", sessionId, ...args, prompt],
  };
}

function cursorAdapter(config: HarnessConfig | undefined): HarnessAdapter {
  const binary = config?.command ?? ["cursor-agent"];
  const args = config?.args ?? [];
  // No resume: cursor-agent picks its own chat id and offers no way to assign one up front, so
  // the id the-loop records could never be handed back to it. A dead pane starts afresh instead.
  return {
    name: "cursor",
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
    fresh: (input) => [...substitute(command, input), ...args],
  };
  if (resumeCommand !== undefined) adapter.resume = (input) => [...substitute(resumeCommand, input), ...args];
  return adapter;
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
