/**
 * The capability family of the event catalog (catalog.ts takes them in, in this order): a
 * capability bundle consented to, installed, loaded or refused, and what its hooks did at a loop
 * point (a step run or failed, a gate decided, a task's resolver failed). The same field specs and rules
 * as the rest of the catalog.
 */
export const CAPABILITY_EVENTS = {
  "capability.consent_required": {
    family: "capability",
    level: "info",
    summary:
      "The bundle at `path` was shown to the operator (`the-loop capabilities add`): everything it runs; nothing changed. Running it again with `--yes` gives consent.",
    fields: { id: "string", version: "string", path: "string", bundle_hash: "string" },
  },
  "capability.installed": {
    family: "capability",
    level: "info",
    summary:
      "The operator consented to the bundle at `path` (`the-loop capabilities add --yes`): the config declares it at `bundle_hash` (`reconsented` when it was declared already).",
    fields: { id: "string", version: "string", path: "string", bundle_hash: "string", config: "string", reconsented: "boolean" },
  },
  "capability.removed": {
    family: "capability",
    level: "info",
    summary: "The capability's entry was taken out of the config (`the-loop capabilities remove`).",
    fields: { id: "string", path: "string", config: "string" },
  },
  "capability.loaded": {
    family: "capability",
    level: "info",
    summary: "An installed capability's bundle matched the hash consented to and loaded.",
    fields: { id: "string", version: "string", path: "string", bundle_hash: "string" },
  },
  "capability.refused": {
    family: "capability",
    level: "error",
    summary:
      "An installed capability did not load (`reason`): its bundle changed since consent, or it is not a valid bundle; nothing loads and the daemon does not start.",
    fields: { path: "string", bundle_hash: "string", reason: "string", id: "string?" },
  },
  "capability.use_refused": {
    family: "capability",
    level: "error",
    summary:
      "A file of a loaded capability's bundle was about to be used (a fragment for an assignment, the bundle a resolver runs from) but no longer hashes to what was consented to (`files`, or the `reason` it could not be read): it was not used, and the work item is blocked at its node until the bundle is consented to again and the daemon restarted.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      point: "string",
      capability: "string",
      hook: "string",
      path: "string",
      files: "string",
      reason: "string",
    },
  },
  "capability.runtime_refused": {
    family: "capability",
    level: "error",
    summary:
      "A capability's hook at a loop `point` was not run: the capability's `runtimeCompat` does not support the `harness` the work item's session runs in (`reason` names the fix). The item is blocked at its node (reason code `capability-runtime`).",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      point: "string",
      capability: "string",
      hook: "string",
      harness: "string",
      reason: "string",
    },
  },
  "capability.runtime_unsupported": {
    family: "capability",
    level: "error",
    summary:
      "After a config reload, a loaded capability's `runtimeCompat` supports none of the `harnesses` the config now runs sessions in (`reason` names them and the fix). It stays loaded; an item whose session runs in one of them is blocked at the first point the capability has a hook at (`capability.runtime_refused`), and `the-loop status` reports it until a reload brings back a harness it supports.",
    fields: { id: "string", path: "string", harnesses: "string[]", reason: "string" },
  },
  "capability.step_run": {
    family: "capability",
    level: "info",
    summary:
      "A capability's step ran at a loop `point` of the work item's node: `how` is `command` (its `the-loop <words>` ran and exited 0), `skill` or `agent` (an instruction went into the assignment).",
    fields: { work_item: "string", graph: "string", node: "string", point: "string", capability: "string", hook: "string", how: "string", ref: "string" },
  },
  "capability.step_failed": {
    family: "capability",
    level: "warning",
    summary:
      "A capability's step at a loop `point` failed or was skipped (`error`: a malformed command, a non-zero exit, a timeout). `on_error` says what followed: `skip` went on, `halt` blocked the item at its node.",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      point: "string",
      capability: "string",
      hook: "string",
      ref: "string",
      error: "string",
      on_error: "string",
    },
  },
  "capability.gate_decided": {
    family: "capability",
    level: "info",
    summary:
      "A capability's gate at a loop `point` was evaluated. `decision`: `pass`, `block` (a blocking gate stopped the item at its node with `message`), `advisory` (a non-blocking gate's block, surfaced), `error-skipped` or `error-halted` (the check itself failed: `error`).",
    fields: {
      work_item: "string",
      graph: "string",
      node: "string",
      point: "string",
      capability: "string",
      hook: "string",
      check: "string",
      blocking: "boolean",
      decision: "string",
      message: "string",
      error: "string?",
    },
  },
  "capability.resolver_failed": {
    family: "capability",
    level: "error",
    summary:
      "A task's content resolver (execute:task) failed for `task_id` (`error`): the item is blocked at its node, never handed the task without its content.",
    fields: { work_item: "string", graph: "string", node: "string", capability: "string", task_id: "string", error: "string" },
  },
} as const;
