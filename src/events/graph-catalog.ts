/**
 * The graph family of the event catalog (catalog.ts, where EVENT_CATALOG takes them in, in this
 * order): every step of a work item's run through its process graph. The same field specs and
 * rules as the rest of the catalog.
 */
export const GRAPH_EVENTS = {
  "graph.started": {
    family: "graph",
    level: "info",
    summary: "A work item's process graph run began at `node` (the graph's start node); `loop_run_id` names the run.",
    fields: { work_item: "string", graph: "string", node: "string", generation: "integer", loop_run_id: "string", actor: "string", actor_kind: "string" },
  },
  "graph.choice_refused": {
    family: "graph",
    level: "warning",
    summary:
      "A start chose a graph (`chosen`) the config does not have: the item's run began on `graph` (graph.default) instead; `known` lists the graphs the config has.",
    fields: { work_item: "string", chosen: "string", graph: "string", known: "string[]", actor: "string", command_source: "string" },
  },
  "graph.advanced": {
    family: "graph",
    level: "info",
    summary: "A work item moved along an edge of its graph, from `from` to `node`, on `outcome` (pass, fail, approved, changes-requested).",
    fields: {
      work_item: "string",
      graph: "string",
      from: "string",
      node: "string",
      outcome: "string",
      generation: "integer",
      actor: "string",
      actor_kind: "string",
    },
  },
  "graph.waiting": {
    family: "graph",
    level: "info",
    summary: "A work item reached a human gate: it waits for an authorized person's answer (`reason` says how to give it).",
    fields: { work_item: "string", graph: "string", node: "string", generation: "integer", reason: "string", actor: "string", actor_kind: "string" },
  },
  "graph.blocked": {
    family: "graph",
    level: "warning",
    summary:
      "Automatic progress stopped at `node` (`reason_code`: max-attempts, no-edge, or a hook's veto); an authorized gate answer or `the-loop graph force` resumes it.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      reason_code: "string",
      reason: "string",
      attempts: "integer",
      actor: "string",
      actor_kind: "string",
    },
  },
  "graph.gate_decided": {
    family: "graph",
    level: "info",
    summary:
      "An authorized person answered the gate at `node` (`decision`: approved or changes-requested; `via`: keyword or review; cli or dashboard for an operator's answer, `actor_kind` operator).",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      decision: "string",
      generation: "integer",
      actor: "string",
      actor_kind: "string",
      via: "string?",
    },
  },
  "graph.gate_ambiguous": {
    family: "graph",
    level: "warning",
    summary: "A comment carried both gate answers: it was recorded and nothing moved. `node`: where the item is (absent when it has no graph run).",
    fields: { work_item: "string", graph: "string", reason: "string", actor: "string", actor_kind: "string", node: "string?" },
  },
  "graph.gate_refused": {
    family: "graph",
    level: "warning",
    summary:
      "A gate answer did not count (`reason_code`: unauthorized, self-authored, not-waiting, no-edge); nothing moved. `node`: where the item is (absent when it has no graph run).",
    fields: { work_item: "string", graph: "string", reason_code: "string", reason: "string", actor: "string", actor_kind: "string", node: "string?" },
  },
  "graph.gate_answer_held": {
    family: "graph",
    level: "warning",
    summary:
      "A gate answer that would count was held, not taken: the login the-loop posts as is not known (`reason`), so it cannot be told from one the agent wrote. It is decided once the login is known, and refused if it is not by `until`.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      decision: "string",
      via: "string",
      actor: "string",
      actor_kind: "string",
      reason: "string",
      until: "string",
    },
  },
  "graph.gate_answer_released": {
    family: "graph",
    level: "info",
    summary:
      "A held gate answer (held since `held_at`) is decided now that the login the-loop posts as is known; graph.gate_decided or graph.gate_refused follows.",
    fields: { work_item: "string", graph: "string", decision: "string", actor: "string", actor_kind: "string", held_at: "string" },
  },
  "graph.gate_answer_refused": {
    family: "graph",
    level: "warning",
    summary:
      "A held gate answer did not count (`reason_code`: identity-unknown, the lookup failed for good; identity-timeout, the hold's bound ran out): a marked comment asks for it again.",
    fields: { work_item: "string", graph: "string", actor: "string", actor_kind: "string", reason_code: "string", reason: "string" },
  },
  "graph.self_login_unknown": {
    family: "graph",
    level: "warning",
    summary:
      "The login the-loop posts as could not be learned, so `checked` (the self-approval guard) could not be checked: `permanent` (GitHub's 401 or 403; an App installation token always gets 403) or not; `fix` says what to do (integrations.github.selfLogin).",
    fields: { work_item: "string", checked: "string", permanent: "boolean", reason: "string", fix: "string" },
  },
  "graph.self_login_learned": {
    family: "graph",
    level: "info",
    summary: "The login the-loop posts as is known again after a failed lookup: held gate answers are decided.",
    fields: { work_item: "string", login: "string" },
  },
  "graph.claim_refused": {
    family: "graph",
    level: "info",
    summary:
      "A claim did not move the item (`reason_code`: not-running, not-current, not-agent-node, blocked, done, failed, exhausted, stalled, canceled, check-failed); `reason` names what is missing, `node` where the item is (absent when it has no graph run), `claimed` the node claimed.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string?",
      reason_code: "string",
      reason: "string",
      actor: "string",
      actor_kind: "string",
      claimed: "string?",
      attempts: "integer?",
    },
  },
  "graph.forced": {
    family: "graph",
    level: "warning",
    summary: "An operator put a work item on `node` with `the-loop graph force` (`from`: where it was, absent when it had no run).",
    fields: { work_item: "string", graph: "string", node: "string", reason: "string", actor: "string", actor_kind: "string", from: "string?" },
  },
  "graph.edge_held": {
    family: "graph",
    level: "info",
    summary:
      "A work item would have moved from `from` to `node` on `outcome`, but `node` is full under routing.limits.perNode (`cap`, its `limit`, the `count` of runs at it): the run waits at the edge, status waiting with reason node-full, until a place frees.",
    fields: {
      work_item: "string",
      graph: "string",
      from: "string",
      node: "string",
      outcome: "string",
      cap: "string",
      limit: "integer",
      count: "integer",
      actor: "string",
      actor_kind: "string",
    },
  },
  "graph.edge_released": {
    family: "graph",
    level: "info",
    summary:
      "A place freed at `node` under routing.limits.perNode: the run that waited at the edge from `from` since `since` took it (its graph.advanced follows), oldest first.",
    fields: { work_item: "string", graph: "string", from: "string", node: "string", outcome: "string", since: "string", actor: "string", actor_kind: "string" },
  },
  "graph.completed": {
    family: "graph",
    level: "info",
    summary: "A work item reached a terminal node of its graph: the run is done.",
    fields: { work_item: "string", graph: "string", node: "string", generation: "integer", actor: "string", actor_kind: "string" },
  },
  "graph.failed": {
    family: "graph",
    level: "error",
    summary: "A work item's graph run ended without reaching a terminal node (`reason_code` says why).",
    fields: { work_item: "string", graph: "string", node: "string", reason_code: "string", reason: "string", actor: "string", actor_kind: "string" },
  },
  "graph.exhausted": {
    family: "graph",
    level: "warning",
    summary:
      "A changes-requested answer would have started a generation past the graph's `maxGenerations`: the run ended `exhausted` at `node` (`reason_code` max-generations), and no assignment was given.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      generation: "integer",
      reason_code: "string",
      reason: "string",
      actor: "string",
      actor_kind: "string",
    },
  },
  "graph.stalled": {
    family: "graph",
    level: "warning",
    summary: "A run at an agent node made no progress within `graph.stallAfterMinutes`: it ended `stalled` at `node` (`reason_code` no-progress).",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      generation: "integer",
      reason_code: "string",
      reason: "string",
      actor: "string",
      actor_kind: "string",
    },
  },
  "graph.canceled": {
    family: "graph",
    level: "info",
    summary:
      "The item was closed (`reason_code` item-closed) or stopped (stopped) while its run was under way: the run ended `canceled` at `node`; `actor` closed or stopped it.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      generation: "integer",
      reason_code: "string",
      reason: "string",
      actor: "string",
      actor_kind: "string",
    },
  },
  "graph.assignment_delivered": {
    family: "graph",
    level: "info",
    summary: "The session received its assignment for `node` (`how`: pasted into the live session, or part of the boot prompt).",
    fields: { work_item: "string", graph: "string", node: "string", generation: "integer", how: "string", actor: "string?" },
  },
  "graph.assignment_failed": {
    family: "graph",
    level: "warning",
    summary: "The assignment for `node` could not be given to the session; `will_retry` says whether it is delivered later (on resume, or the next event).",
    fields: { work_item: "string", graph: "string", node: "string", generation: "integer", error: "string", will_retry: "boolean", actor: "string?" },
  },
  "graph.session_told": {
    family: "graph",
    level: "info",
    summary:
      "The item's session was told, in one message, that its run ended (`about` run-ended, `status` how) or that a gate or check blocked it after a claim (`about` blocked, `status` blocked). `outcome`: pasted, or why not (no-session, paused, not-started, no-harness, closed, …); `close_after` says when the session closes after an end (minutes, `never`, or empty for a block).",
    fields: { work_item: "string", graph: "string", node: "string", about: "string", status: "string", outcome: "string", close_after: "string" },
  },
  "graph.record_moved_aside": {
    family: "graph",
    level: "warning",
    summary:
      "A work item's graph state that did not parse was moved aside (kept, never deleted); the item's next start begins a new run, or `the-loop graph force` puts it on a node.",
    fields: { work_item: "string", file: "string", moved_to: "string", reason: "string" },
  },
  "graph.effect_failed": {
    family: "graph",
    level: "warning",
    summary:
      "An effect of a committed graph move could not be carried out (`effect`: phase-label, hook, announce-phase, request-review, announce-force, …); the move stands and the other effects still ran.",
    fields: { work_item: "string", graph: "string", node: "string", effect: "string", error: "string" },
  },
} as const;
