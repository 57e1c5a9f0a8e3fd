import type { GraphConfig } from "../config/graph-schema.js";
import { compileKeywordVocabulary, parseKeywords } from "../control/keywords.js";
import type { KeywordVocabulary } from "../control/keywords.js";
import { gateRefusal } from "./advance.js";
import type { GateDecision } from "./advance.js";
import type { GraphState } from "./state.js";
import type { Graph } from "../graph/types.js";

/**
 * Reading a human gate's answer. Structured input only: the configured keywords
 * (`the-loop:approve`, `the-loop:request-changes`), read by the control keywords' parser with its
 * whole-token and quoting rules (control/keywords.ts: a keyword in a quote, a code span, a fenced
 * block or an HTML comment never counts), or a pull request review's state. Prose never decides:
 * "LGTM", "approved" and "not approved" all move nothing, because no reading of prose tells
 * them apart reliably, and a gate that guesses wrong ships unreviewed work.
 *
 * Who may answer is decided here too (decideGateInput): an authorized, named person, and not
 * the login the-loop itself posts as unless the operator opted in. The agent works with the
 * operator's token, so a comment it posts carries that login: without the guard an agent could
 * approve its own gate. A separate bot identity for the-loop keeps the operator's own answers
 * counting.
 */

/** Both answers, in the order an ambiguous parse lists them. */
export const GATE_DECISIONS: readonly GateDecision[] = ["approved", "changes-requested"];

export type GateVocabulary = KeywordVocabulary<GateDecision>;

export type ParsedGate =
  | { readonly kind: "none" }
  | { readonly kind: "answer"; readonly decision: GateDecision }
  | { readonly kind: "ambiguous"; readonly decisions: readonly GateDecision[] };

const NONE: ParsedGate = Object.freeze({ kind: "none" });

/** Compiles the configured gate keywords (`graph.keywords`) once per config load. */
export function compileGateVocabulary(keywords: GraphConfig["keywords"]): GateVocabulary {
  return compileKeywordVocabulary({ approved: keywords.approve, "changes-requested": keywords.requestChanges }, GATE_DECISIONS, "gate");
}

/** Reads a comment body for a gate answer; both answers in one comment are ambiguous. */
export function parseGateAnswer(body: string | null | undefined, vocabulary: GateVocabulary): ParsedGate {
  const parsed = parseKeywords(body, vocabulary);
  switch (parsed.kind) {
    case "none":
      return NONE;
    case "keyword":
      return Object.freeze({ kind: "answer", decision: parsed.key });
    case "ambiguous":
      return Object.freeze({ kind: "ambiguous", decisions: parsed.keys });
  }
}

/**
 * A pull request review's state as a gate answer: `APPROVED` and `CHANGES_REQUESTED` (the REST
 * spelling; webhooks send them in lower case) answer, anything else (`COMMENTED`, `DISMISSED`,
 * `PENDING`) does not.
 */
export function gateAnswerOfReview(state: string | null | undefined): ParsedGate {
  switch (state?.toUpperCase()) {
    case "APPROVED":
      return Object.freeze({ kind: "answer", decision: "approved" });
    case "CHANGES_REQUESTED":
      return Object.freeze({ kind: "answer", decision: "changes-requested" });
    default:
      return NONE;
  }
}

/** One input's answers read together (a review's state and its body): two different ones are ambiguous. */
export function mergeGateAnswers(...answers: readonly ParsedGate[]): ParsedGate {
  const found = new Set<GateDecision>();
  for (const answer of answers) {
    if (answer.kind === "answer") found.add(answer.decision);
    else if (answer.kind === "ambiguous") for (const decision of answer.decisions) found.add(decision);
  }
  const decisions = GATE_DECISIONS.filter((decision) => found.has(decision));
  const [only] = decisions;
  if (only === undefined) return NONE;
  return decisions.length === 1 ? Object.freeze({ kind: "answer", decision: only }) : Object.freeze({ kind: "ambiguous", decisions });
}

/** Why a gate input does not count. */
export const GATE_REFUSAL_CODES = ["no-answer", "unauthorized", "self-authored", "not-waiting", "ambiguous"] as const;
export type GateRefusalCode = (typeof GATE_REFUSAL_CODES)[number];

export type GateInputDecision =
  { readonly kind: "accept"; readonly decision: GateDecision } | { readonly kind: "refuse"; readonly reasonCode: GateRefusalCode; readonly reason: string };

export interface GateInput {
  readonly answer: ParsedGate;
  /** Whether the author is in the authorized users (routing.authorizedUsers). */
  readonly authorized: boolean;
  /** The tracker login that wrote it; null when the tracker names no one. */
  readonly author: string | null;
  /** The login the-loop posts as (the token's user); null when it is not known (the local tracker). */
  readonly selfLogin: string | null;
  /** `graph.allowSelfApproval`: answers by selfLogin count. */
  readonly allowSelfApproval: boolean;
  readonly state: GraphState | undefined;
  readonly graph: Graph;
}

/**
 * Whether a gate input counts, in this order: it carries an answer; its author is named and
 * authorized; the author is not the-loop's own login (unless allowed); the item is waiting for an
 * answer (at a human gate, or blocked); it carries one answer, not both. A refusal other than
 * `no-answer` is worth recording (recordRefusal): someone tried to answer and nothing moved.
 */
export function decideGateInput(input: GateInput): GateInputDecision {
  const { answer, author } = input;
  if (answer.kind === "none") return refused("no-answer", "the input carries no gate answer");
  if (author === null || author === "" || !input.authorized) {
    const who = author ? `@${author}` : "an unnamed author";
    return refused("unauthorized", `${who} is not an authorized user, so the gate answer does not count`);
  }
  if (!input.allowSelfApproval && input.selfLogin !== null && sameLogin(author, input.selfLogin)) {
    return refused(
      "self-authored",
      `@${author} is the login the-loop posts as (the agent's comments carry it too), so its gate answers do not count; ` +
        "answer as another user, or give the-loop its own bot identity (graph.allowSelfApproval accepts them)",
    );
  }
  const waiting = gateRefusal(input.graph, input.state);
  if (waiting) return refused("not-waiting", waiting.reason);
  if (answer.kind === "ambiguous") {
    return refused("ambiguous", `the comment both approves and requests changes, so nothing moved; answer again with one of them`);
  }
  return { kind: "accept", decision: answer.decision };
}

/** Tracker logins compare without case (GitHub's do). */
function sameLogin(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function refused(reasonCode: GateRefusalCode, reason: string): GateInputDecision {
  return { kind: "refuse", reasonCode, reason };
}
