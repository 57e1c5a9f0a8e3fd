import { LOCAL_NETWORK_PARTICIPATION } from "../../../src/sdk/hooks/loop-catalog.js";
import type { LoopGatePrePayload, LoopGenerationPrePayload, LoopStartedPayload } from "../../../src/sdk/hooks/loop-catalog.js";

/** The loop context as a run's first generation would carry it: agh's shape, a key with no value omitted. */
export const LOOP_CONTEXT = {
  timestamp: "2026-07-27T12:00:00.000Z",
  loop_run_id: "run-1",
  workspace_id: "octo/repo",
  loop_name: "default",
  generation: 1,
  node_id: "implement",
  resolved_network_participation: LOCAL_NETWORK_PARTICIPATION,
  agent_name: "claude",
  session_id: "s-1",
  actor_kind: "daemon",
  actor_id: "the-loop",
  origin_kind: "web",
} as const;

export function generationPre(): LoopGenerationPrePayload {
  return { event: "loop.generation.pre", ...LOOP_CONTEXT, status: "running", details: { the_loop: { origin_kind: "comment" } } };
}

export function gatePre(): LoopGatePrePayload {
  return {
    event: "loop.gate.pre",
    ...LOOP_CONTEXT,
    task_id: "review#1",
    run_id: "run-1/review#1",
    run_kind: "coordinator",
    node_id: "review",
    gate_id: "review",
    decision: "approve",
    status: "running",
    details: { the_loop: { origin_kind: "comment", node_kind: "human" } },
  };
}

export function started(): LoopStartedPayload {
  return { event: "loop.started", ...LOOP_CONTEXT, status: "running", cause: "start", details: { the_loop: { origin_kind: "comment" } } };
}
