/**
 * agh's vocabularies for the `loop.*` payloads, and the-loop's facts mapped onto them: a hook
 * written for agh (compozy/compozy at 8eeb8a381, the version the loop-hooks requirement copies)
 * reads only words agh defines. Where the-loop's fact has no exact agh value the nearest one is
 * sent, and the-loop's own word travels in `details.the_loop` (see docs/hooks.md, "agh's values").
 * Pure data with no imports, like the catalogs.
 */

/** agh's `run_kind` (task run kinds). */
export const AGH_RUN_KINDS = ["worker", "coordinator", "network_wake"] as const;
/** agh's `actor_kind`. */
export const AGH_ACTOR_KINDS = ["human", "agent_session", "automation", "extension", "network_peer", "daemon"] as const;
/** agh's `origin_kind`. */
export const AGH_ORIGIN_KINDS = ["cli", "web", "uds", "http", "automation", "extension", "network", "agent_session", "daemon"] as const;
/** agh's loop-run transition causes. */
export const AGH_CAUSES = [
  "start",
  "promote",
  "operator_stop",
  "goal_replace",
  "goal_clear",
  "pause_boundary",
  "operator_resume",
  "approval",
  "gate_rejected",
  "contract",
  "budget",
  "iteration_cap",
  "no_progress",
  "watch_poll",
  "watch_events",
  "coordinator_failure",
] as const;
/** agh's human-gate decisions. */
export const AGH_DECISIONS = ["approve", "request_changes", "reject"] as const;
/** agh's task statuses (`task_status`). */
export const AGH_TASK_STATUSES = ["draft", "pending", "blocked", "needs_attention", "ready", "in_progress", "completed", "failed", "canceled"] as const;
/** agh's task-run statuses (`run_status`: the node's run, not the loop run). */
export const AGH_RUN_STATUSES = ["queued", "claimed", "starting", "running", "completed", "failed", "canceled", "needs_attention"] as const;
/** agh's loop-run statuses (`status`); `planned` is what agh's loop.generation.post says of a generation. */
export const AGH_LOOP_STATUSES = [
  "queued",
  "running",
  "watching",
  "needs-approval",
  "paused",
  "done",
  "no-op",
  "blocked",
  "failed",
  "exhausted",
  "stalled",
] as const;

export type AghRunKind = (typeof AGH_RUN_KINDS)[number];
export type AghActorKind = (typeof AGH_ACTOR_KINDS)[number];
export type AghOriginKind = (typeof AGH_ORIGIN_KINDS)[number];
export type AghCause = (typeof AGH_CAUSES)[number];
export type AghDecision = (typeof AGH_DECISIONS)[number];
export type AghTaskStatus = (typeof AGH_TASK_STATUSES)[number];
export type AghRunStatus = (typeof AGH_RUN_STATUSES)[number];
export type AghLoopStatus = (typeof AGH_LOOP_STATUSES)[number];

/** An agh value, and the-loop's own word when agh's is only the nearest. */
export interface Mapped<V extends string> {
  readonly value: V;
  readonly ours?: string;
}

const exact = <V extends string>(value: V): Mapped<V> => ({ value });
const nearest = <V extends string>(value: V, ours: string): Mapped<V> => ({ value, ours });

/** Who works a node (`agent`, `human` a gate, `terminal`) as agh's run kind: an agent's attempt is a worker run; a gate and a terminal step are the loop's own decisions, a coordinator's. */
export function aghRunKind(nodeKind: string): Mapped<AghRunKind> {
  return nodeKind === "agent" ? exact("worker") : nearest("coordinator", nodeKind);
}

/** Who caused the event: the-loop's `agent`, `human`, `operator`, `daemon`. An operator is a person at the CLI: agh's `human`. */
export function aghActorKind(kind: string): Mapped<AghActorKind> {
  switch (kind) {
    case "agent":
      return exact("agent_session");
    case "human":
      return exact("human");
    case "daemon":
      return exact("daemon");
    default:
      return nearest("human", kind);
  }
}

/** What started the run: a tracker comment is a person on the web; the spawn policy alone is automation; a retry the daemon's own. */
export function aghOriginKind(kind: string): Mapped<AghOriginKind> {
  switch (kind) {
    case "cli":
      return exact("cli");
    case "comment":
      return nearest("web", kind);
    case "event":
      return nearest("automation", kind);
    default:
      return nearest("daemon", kind);
  }
}

/** The loop run's status: `waiting` (at a human gate) is agh's `needs-approval`; `canceled`, which agh's version lacks, is `failed` (an operator stop). */
export function aghLoopStatus(status: string): Mapped<AghLoopStatus> {
  if (status === "waiting") return nearest("needs-approval", status);
  if (status === "canceled") return nearest("failed", status);
  if ((AGH_LOOP_STATUSES as readonly string[]).includes(status)) return exact(status as AghLoopStatus);
  return nearest("running", status);
}

/** A gate's answer. */
export function aghDecision(decision: string): Mapped<AghDecision> {
  if (decision === "approved") return exact("approve");
  if (decision === "changes-requested") return exact("request_changes");
  return nearest("reject", decision);
}

/** How an attempt at a node ended (`passed`, `failed`, `forced`), as agh's task and task-run statuses. */
export function aghAttemptStatus(taskStatus: string): Mapped<"completed" | "failed" | "canceled"> {
  if (taskStatus === "passed") return exact("completed");
  if (taskStatus === "failed") return exact("failed");
  return nearest("canceled", taskStatus);
}

/**
 * What began or ended the run. the-loop's words: `start`; a run's end at a terminal node (`node`,
 * the graph's definition of done: agh's coordinator verdict, `contract`), a hook's denial
 * (`contract`), `iteration_cap`, `no_progress`, an item closed or a run stopped (`operator_stop`),
 * and a run blocked or failed by the graph's own rules (`contract`).
 */
export function aghCause(cause: string): Mapped<AghCause> {
  switch (cause) {
    case "start":
    case "contract":
    case "iteration_cap":
    case "no_progress":
    case "approval":
      return exact(cause);
    case "closed":
    case "stopped":
      return nearest("operator_stop", cause);
    default:
      return nearest("contract", cause);
  }
}
