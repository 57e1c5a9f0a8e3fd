import { messageOf } from "../errors.js";
import type { ControlCommand } from "../config/schema.js";
import type { ControlOutcome, ControlRequest } from "../control/types.js";
import type { ControlCommentResult } from "../dispatch/announce-control.js";
import type { EventSink } from "../events/log.js";
import type { ClaimAnswer } from "../graph-driver/start-claim-force.js";
import type { OperatorAnswerRequest } from "../graph-driver/operator-answer.js";
import { REASON_MAX, boundedName } from "../sessions/names.js";

/**
 * The dashboard's actions, each through the code path of the CLI command it stands for, acting
 * as dashboard.operator with the source `dashboard`: start, stop, pause and resume are the
 * dispatcher's control commands (`the-loop sessions <command>`: the same checks and events) and
 * then the same marked comment on the thread; approve and request-changes are the operator's gate
 * answer (`the-loop graph approve | request-changes`); close is the one close path (`sessions
 * close`); answer delivers the operator's reply to the agent's question as a comment would.
 * Without an operator every action is refused: the dashboard is read-only.
 */

export const DASHBOARD_ACTIONS = ["start", "stop", "pause", "resume", "approve", "request-changes", "answer", "close"] as const;
export type DashboardAction = (typeof DASHBOARD_ACTIONS)[number];

export function isDashboardAction(name: string): name is DashboardAction {
  return (DASHBOARD_ACTIONS as readonly string[]).includes(name);
}

/** How long an answer to a question may be: as long as a question (the-loop ask). */
export const ANSWER_MAX = 4_000;

export interface ActionPorts {
  readonly control: (request: ControlRequest) => Promise<ControlOutcome>;
  readonly announce: (request: ControlRequest) => Promise<ControlCommentResult>;
  readonly graphAnswer: (request: OperatorAnswerRequest) => Promise<ClaimAnswer>;
  /** The close path; the session's tmux target, or undefined when the item has no live session. */
  readonly close: (ref: string) => Promise<string | undefined>;
  /** The operator's answer to the agent's question, delivered into its session and recorded on the thread. */
  readonly answer: (ref: string, text: string, actor: string) => Promise<{ readonly delivered: boolean; readonly problem?: string }>;
  /**
   * The work item a control command given for `ref` acts on (registry/acted-on.ts): a pull
   * request bound to a work item acts on it, as the CLI's `sessions` commands and a comment's
   * keyword do. The item itself when omitted.
   */
  readonly actedOn?: (ref: string) => string;
  /** Why the daemon does not serve `ref` (methods.ts unservedReason), or undefined. */
  readonly unserved: (ref: string) => string | undefined;
  readonly events: EventSink;
}

/** What an action answers: `ok` false with a status and a reason when it was refused or did not apply. */
export type ActionResult =
  | { readonly ok: true; readonly status: 200; readonly body: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly status: 400 | 403 | 404 | 409 | 500; readonly body: { readonly error: string; readonly [key: string]: unknown } };

/** The request body's text field, bounded; undefined when absent or not text. */
function textOf(body: unknown, key: string): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const value = (body as Record<string, unknown>)[key];
  return typeof value === "string" ? value : undefined;
}

function refused(status: 400 | 403 | 404 | 409 | 500, error: string, extra: Record<string, unknown> = {}): ActionResult {
  return { ok: false, status, body: { error, ...extra } };
}

/**
 * Carries out one action on `ref` (canonical) as `operator` (undefined: read-only, refused 403),
 * recording `dashboard.action` whatever came of it.
 */
export async function runAction(ports: ActionPorts, operator: string | undefined, ref: string, action: DashboardAction, body: unknown): Promise<ActionResult> {
  if (operator === undefined) {
    return refused(403, "the dashboard is read-only: set dashboard.operator (one of routing.authorizedUsers) to act from it");
  }
  // A control command acts on the item a pull request is bound to: that one must be served.
  const isControl = action === "start" || action === "stop" || action === "pause" || action === "resume";
  const unserved = ports.unserved(isControl ? (ports.actedOn?.(ref) ?? ref) : ref);
  if (unserved !== undefined) return refused(404, unserved);
  let result: ActionResult;
  try {
    result = await carryOut(ports, operator, ref, action, body);
  } catch (error) {
    result = refused(500, `could not carry out the ${action} of ${ref}: ${messageOf(error)}`);
  }
  ports.events.emit("dashboard.action", {
    work_item: ref,
    action,
    actor: operator,
    ok: result.ok,
    ...(result.ok ? {} : { error: boundedName(result.body.error, REASON_MAX) }),
  });
  return result;
}

async function carryOut(ports: ActionPorts, operator: string, ref: string, action: DashboardAction, body: unknown): Promise<ActionResult> {
  switch (action) {
    case "start":
    case "stop":
    case "pause":
    case "resume":
      return control(ports, operator, ref, action);
    case "approve":
    case "request-changes": {
      const reason = boundedName(textOf(body, "reason") ?? "", REASON_MAX);
      if (action === "request-changes" && reason === "") return refused(400, "a request for changes says what to change: give it as reason");
      const answer = await ports.graphAnswer({
        ref,
        decision: action === "approve" ? "approved" : "changes-requested",
        reason,
        actor: { kind: "operator", id: operator },
        via: "dashboard",
      });
      const document = {
        moved: answer.moved,
        ref: answer.ref,
        graph: answer.graph,
        node: answer.node,
        status: answer.status,
        reason_code: answer.reasonCode,
        reason: answer.reason,
      };
      return answer.moved ? { ok: true, status: 200, body: document } : refused(409, answer.reason ?? "the gate did not move", document);
    }
    case "close": {
      const closed = await ports.close(ref);
      if (closed === undefined) return refused(409, `${ref} has no live session`);
      return { ok: true, status: 200, body: { closed: ref, tmuxTarget: closed } };
    }
    case "answer": {
      const text = (textOf(body, "text") ?? "").trim();
      if (text === "") return refused(400, "the answer is empty: give it as text");
      if (text.length > ANSWER_MAX) return refused(400, `the answer is too long (at most ${ANSWER_MAX} characters)`);
      const answered = await ports.answer(ref, text, operator);
      if (!answered.delivered) return refused(409, answered.problem ?? `${ref} has no live session to answer`);
      return { ok: true, status: 200, body: { workItem: ref, delivered: true, ...(answered.problem ? { problem: answered.problem } : {}) } };
    }
  }
}

async function control(ports: ActionPorts, operator: string, named: string, command: ControlCommand): Promise<ActionResult> {
  const ref = ports.actedOn?.(named) ?? named;
  const bound =
    ref !== named
      ? { boundFrom: named, note: `${named} is bound to ${ref}, so the ${command} acts on ${ref}, as the keyword in a comment on ${named} would` }
      : {};
  const request: ControlRequest = { ref, command, source: "dashboard", actor: operator, note: `the-loop dashboard: ${command}` };
  const outcome = await ports.control(request);
  if (!outcome.applied) return refused(409, outcome.message, { workItem: ref, command, applied: false, reason: outcome.reason, ...bound });
  const comment = await ports.announce(request);
  return {
    ok: true,
    status: 200,
    body: {
      workItem: ref,
      command,
      applied: true,
      effect: outcome.effect,
      ...(outcome.session ? { session: outcome.session } : {}),
      ...(outcome.problem ? { problem: outcome.problem } : {}),
      ...bound,
      comment,
    },
  };
}
