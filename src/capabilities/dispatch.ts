import { z } from "zod";
import type { LoopPoint } from "../graph/types.js";
import type { ActiveHook } from "./active.js";
import { isCommandWords } from "./manifest.js";

/**
 * The decisions of dispatching a point's active hooks, as plain functions over data: what a
 * check's output means, what a gate's verdict does, what a step's run does, and the text the
 * assignment receives. The runtime (src/graph-driver/capability-points.ts) runs the processes and
 * applies these. Every kind is dispatched here: a point never hand-rolls one shape of one kind.
 */

export type StepHook = Extract<ActiveHook, { kind: "step" }>;
export type GateHook = Extract<ActiveHook, { kind: "gate" }>;
export type ContributionHook = Extract<ActiveHook, { kind: "contribution" }>;

/** The skill id the contract dispatches a `ref.skill` stem as: `gsd-<stem>`. */
export const skillId = (stem: string): string => `gsd-${stem}`;

/** What an agent step prints first, so a person watching does not kill a healthy, silent subagent. */
export function livenessBanner(agent: string): string {
  return `◆ Spawning ${agent}... (runs in a subagent — no output until it returns; expected, not a freeze)`;
}

/** The argv words of a hook's command, or why they are refused (checked again here, whatever install checked). */
export function commandWordsOf(value: unknown, field: string): { readonly words: readonly string[] } | { readonly refused: string } {
  if (!isCommandWords(value)) {
    return { refused: `${field} ${JSON.stringify(String(value)).slice(0, 120)} is not a command (lowercase words, one space between): not run` };
  }
  return { words: value.split(" ") };
}

/** The parts of a finished process a check's output is read from (a BoundedResult has them). */
export interface ProcessOutcome {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly error?: string;
}

/** A check evaluated: `{block, message?}` read, or why it could not be. */
export type CheckOutcome = { readonly ok: true; readonly block: boolean; readonly message?: string } | { readonly ok: false; readonly error: string };

const MESSAGE_MAX = 500;

function bounded(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MESSAGE_MAX ? `${flat.slice(0, MESSAGE_MAX - 1)}…` : flat;
}

/** Why a process did not succeed, in one bounded line: its error, its timeout, or its exit and stderr's tail. */
export function failureOf(outcome: ProcessOutcome, what: string): string | undefined {
  if (outcome.error !== undefined) return `${what} could not run: ${bounded(outcome.error)}`;
  if (outcome.timedOut) return `${what} timed out`;
  if (outcome.exitCode !== 0) {
    const tail = bounded(
      outcome.stderr
        .split("\n")
        .filter((line) => line.trim() !== "")
        .slice(-3)
        .join(" "),
    );
    return `${what} exited ${outcome.exitCode ?? "by a signal"}${tail ? `: ${tail}` : ""}`;
  }
  return undefined;
}

/**
 * A query's (or the predicate evaluator's) answer: JSON `{block: boolean, message?: string}` on
 * stdout with exit 0. Anything else — another exit, no JSON, a `block` that is not a boolean —
 * is an error, which the gate's `onError` routes; it is never read as "no block".
 */
/** A check's answer; other keys are ignored (a newer evaluator may say more). */
const checkOutputSchema = z.looseObject({ block: z.boolean(), message: z.string().optional() });

export function readCheckOutput(outcome: ProcessOutcome, what: string): CheckOutcome {
  const failure = failureOf(outcome, what);
  if (failure !== undefined) return { ok: false, error: failure };
  let value: unknown;
  try {
    value = JSON.parse(outcome.stdout);
  } catch {
    return { ok: false, error: `${what} did not print JSON {"block": true|false, "message"?: "…"}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, error: `${what} printed ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}, not {"block": …}` };
  const parsed = checkOutputSchema.safeParse(value);
  if (!parsed.success) {
    const wrong = parsed.error.issues.some((issue) => issue.path[0] === "block") ? 'no boolean "block"' : 'a "message" that is not a string';
    return { ok: false, error: `${what} printed ${wrong}` };
  }
  const { block, message } = parsed.data;
  return message !== undefined && message.trim() !== "" ? { ok: true, block, message: bounded(message) } : { ok: true, block };
}

export type GateDecisionName = "pass" | "block" | "advisory" | "error-skipped" | "error-halted" | "agent-verdict";

export interface GateVerdict {
  readonly decision: GateDecisionName;
  /** The gate stops the step: the item is blocked at its node with `message`. */
  readonly halt: boolean;
  /** What is surfaced (the reason of a halt, the advisory, the warning). */
  readonly message: string;
  readonly error?: string;
}

/**
 * What a gate's evaluated check does. A blocking gate's block stops the step with the gate's
 * message; an advisory one surfaces it and goes on; a check that itself failed is routed by
 * `onError` (`skip` warns and goes on, `halt` stops).
 */
export function decideGate(gate: GateHook, outcome: CheckOutcome): GateVerdict {
  const name = `${gate.capId} ${gate.source}`;
  // gsd-core's gates carry no message of their own: the check's message says why.
  const said = gate.message ?? `the gate ${name} ${gate.blocking ? "blocks" : "advises"}`;
  if (!outcome.ok) {
    return gate.onError === "halt"
      ? {
          decision: "error-halted",
          halt: true,
          message: `${said} (the gate's check failed, and its onError is halt: ${outcome.error}) [${name}]`,
          error: outcome.error,
        }
      : { decision: "error-skipped", halt: false, message: `warning: the gate ${name} was skipped: its check failed: ${outcome.error}`, error: outcome.error };
  }
  if (!outcome.block) return { decision: "pass", halt: false, message: "" };
  const detail = outcome.message !== undefined ? (gate.message !== undefined ? ` (${outcome.message})` : `: ${outcome.message}`) : "";
  return gate.blocking
    ? { decision: "block", halt: true, message: `${said}${detail} [${name}]` }
    : { decision: "advisory", halt: false, message: `${said}${detail} [${name}, advisory]` };
}

export interface StepVerdict {
  readonly halt: boolean;
  readonly message: string;
}

/** A command step that failed: advisory by construction, so only its `onError: halt` stops the point. */
export function decideStepFailure(step: StepHook, error: string): StepVerdict {
  const name = `${step.capId} ${step.source}`;
  return step.onError === "halt"
    ? { halt: true, message: `the step ${name} failed, and its onError is halt: ${error}` }
    : { halt: false, message: `warning: the step ${name} failed and was skipped: ${error}` };
}

/** The instruction a skill or agent step, or an agent-verdict gate, puts into the assignment. */
export function instructionOf(hook: StepHook | GateHook, point: LoopPoint): string | undefined {
  const from = `(${hook.capId}, ${point})`;
  if (hook.kind === "step") {
    if (hook.ref.skill !== undefined) {
      // The contract's skill id is gsd-<stem>; a bundle ships no skill file, so the session may not have it.
      return `Use the skill \`${skillId(hook.ref.skill)}\` now ${from}. If this session has no such skill, say so and go on: a step never blocks.`;
    }
    if (hook.ref.agent !== undefined) {
      return `Dispatch the agent \`${hook.ref.agent}\` as a subagent ${from}. Before you dispatch it, print exactly this line:\n  ${livenessBanner(hook.ref.agent)}`;
    }
    return undefined;
  }
  const verdict = hook.check.agentVerdict;
  if (verdict === undefined) return undefined;
  const agent = verdict.ref ?? "";
  return (
    `Ask the agent \`${agent}\` for its verdict ${from}: ${verdict.prompt ?? ""}\n` +
    `  Before you dispatch it, print exactly this line: ${livenessBanner(agent)}\n` +
    `  If its verdict finds a problem, report it and go on (advisory, never blocking)${hook.message !== undefined ? `: ${hook.message}` : "."}`
  );
}

/** What one pass of points gives the assignment, gathered in dispatch order. */
export interface PointTextParts {
  readonly points: readonly LoopPoint[];
  /** Each role's fragments, verbatim, in the order they were contributed. */
  readonly contributions: readonly { readonly role: string; readonly text: string }[];
  readonly instructions: readonly string[];
  /** Advisories and warnings surfaced to the agent. */
  readonly notes: readonly string[];
  /** Task contents resolved for execute:task, in the plan's order. */
  readonly tasks: readonly { readonly id: string; readonly title: string; readonly content: string }[];
}

/**
 * The assignment's capability section: each role's fragments under a heading naming the role
 * (the-loop has one session, so every role's text goes to it), the instructions, the resolved
 * tasks, the notes. Empty when there is nothing: a point without active hooks adds nothing.
 */
export function pointText(parts: PointTextParts): string {
  const sections: string[] = [];
  const roles = [...new Set(parts.contributions.map((contribution) => contribution.role))];
  for (const role of roles) {
    const texts = parts.contributions.filter((contribution) => contribution.role === role).map((contribution) => contribution.text);
    sections.push(`## For the ${role}\n\n${texts.join("\n\n")}`);
  }
  if (parts.instructions.length > 0) sections.push(`## Steps from capabilities\n\n${parts.instructions.map((line) => `- ${line}`).join("\n")}`);
  for (const task of parts.tasks) sections.push(`## Task ${task.id}: ${task.title}\n\n${task.content}`);
  if (parts.notes.length > 0) sections.push(`## Notes from capability gates\n\n${parts.notes.map((line) => `- ${line}`).join("\n")}`);
  if (sections.length === 0) return "";
  return [`Capabilities at ${parts.points.join(", ")}:`, ...sections].join("\n\n");
}
