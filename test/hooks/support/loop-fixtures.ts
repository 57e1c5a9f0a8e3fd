import { LOCAL_NETWORK_PARTICIPATION } from "../../../src/sdk/hooks/loop-catalog.js";
import type { LoopGatePrePayload, LoopGenerationPrePayload, LoopStartedPayload } from "../../../src/sdk/hooks/loop-catalog.js";

/** The loop context as a run's first generation would carry it. */
export const LOOP_CONTEXT = {
  timestamp: "2026-07-27T12:00:00.000Z",
  loop_run_id: "run-1",
  parent_loop_run_id: null,
  workspace_id: "octo/repo",
  loop_name: "default",
  generation: 1,
  task_id: null,
  run_id: null,
  run_kind: null,
  node_id: "implement",
  resolved_network_participation: LOCAL_NETWORK_PARTICIPATION,
  agent_name: "claude",
  session_id: "s-1",
  actor_kind: "daemon",
  actor_id: "the-loop",
  origin_kind: "comment",
  origin_ref: null,
} as const;

export function generationPre(): LoopGenerationPrePayload {
  return { event: "loop.generation.pre", ...LOOP_CONTEXT, status: "running", reason_code: null, details: null, denied: false, deny_reason: null };
}

export function gatePre(): LoopGatePrePayload {
  return {
    event: "loop.gate.pre",
    ...LOOP_CONTEXT,
    task_id: "review#1",
    run_id: "run-1/review#1",
    run_kind: "human",
    node_id: "review",
    gate_id: "review",
    decision: "approved",
    status: "running",
    reason_code: null,
    details: { edge: "approved" },
    denied: false,
    deny_reason: null,
  };
}

export function started(): LoopStartedPayload {
  return { event: "loop.started", ...LOOP_CONTEXT, status: "running", cause: "start", reason_code: null, details: null };
}
