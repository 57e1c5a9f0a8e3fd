import { normalizeLabel } from "../workitem/label.js";

/**
 * Which harness a work item's session runs (docs/agents.md, "Choosing an agent per work item"):
 * the one an operator's start chose (`sessions start --agent NAME`), else the one the first
 * mapped label picks (`routing.harnessByLabel`, in the config's order), else
 * `routing.defaultHarness`. Pure. A choice is only ever among the harnesses the operator's config
 * names — a label's author is not known when a start reads it, and no comment text ever names a
 * harness (the execution-control threat model), so neither can reach an agent the operator did
 * not set up.
 */

export interface HarnessRouting {
  readonly defaultHarness: string;
  readonly harnesses: Readonly<Record<string, unknown>>;
  readonly harnessByLabel: Readonly<Record<string, string>>;
}

export type HarnessChoice = { readonly harness: string; readonly by: "start" | "label" | "default"; readonly label?: string } | { readonly refused: string };

/** What the config allows a start or a label to pick: the default, each declared harness, each a label maps to. */
export function allowedHarnesses(routing: HarnessRouting): string[] {
  return [...new Set([routing.defaultHarness, ...Object.keys(routing.harnesses), ...Object.values(routing.harnessByLabel)])];
}

/**
 * The harness of an item's next session. `chosen` is an operator's start's choice (kept in its
 * control record); one the config no longer allows is refused, never replaced by another agent.
 */
export function chooseHarness(routing: HarnessRouting, input: { readonly chosen?: string | undefined; readonly labels: readonly string[] }): HarnessChoice {
  const allowed = allowedHarnesses(routing);
  if (input.chosen !== undefined) {
    if (allowed.includes(input.chosen)) return { harness: input.chosen, by: "start" };
    return {
      refused: `the start chose harness "${input.chosen}", which the config no longer allows (allowed: ${allowed.join(", ")}); start it again with --agent naming one of those, or declare it under routing.harnesses`,
    };
  }
  const carried = new Set(input.labels.map(normalizeLabel));
  for (const [label, harness] of Object.entries(routing.harnessByLabel)) {
    if (carried.has(normalizeLabel(label))) return { harness, by: "label", label };
  }
  return { harness: routing.defaultHarness, by: "default" };
}
