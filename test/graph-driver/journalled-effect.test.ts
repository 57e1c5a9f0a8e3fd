import { describe, expect, it } from "vitest";
import { parseJournalledEffect } from "../../src/graph-driver/journalled-effect.js";

// A journal is a file: what comes back from it is parsed with every field of its kind, so the
// effect runner never meets a half-formed effect (a TypeError mid-resume) — it is dropped instead.
describe("parseJournalledEffect", () => {
  it.each<[string, unknown]>([
    ["a phase label", { kind: "phase-label", remove: null, add: "loop:design" }],
    ["a phase label taken off", { kind: "phase-label", remove: "loop:design", add: null }],
    ["a phase_changed hook", { kind: "hook", point: "phase_changed", graph: "g", node: "n", fromPhase: "", toPhase: "design", terminal: false }],
    ["a waiting_for_input hook", { kind: "hook", point: "waiting_for_input", asker: "gate", node: "n" }],
    ["an announced phase", { kind: "announce-phase", node: "n", phase: null, terminal: true }],
    ["an assignment", { kind: "deliver-assignment", node: "n", generation: 2 }],
    ["a review request", { kind: "request-review", node: "n", generation: 1 }],
    ["an announced force", { kind: "announce-force", from: null, to: "n", reason: "r", actor: { kind: "operator", id: "ops" } }],
    ["a run's end", { kind: "run-ended", status: "done" }],
    ["a loop event", { kind: "loop", name: "loop.started", payload: { a: 1 } }],
    ["a loop denial", { kind: "loop-denial", point: "loop.gate.pre", hook: "h", reason: "no", node: "n", status: "blocked" }],
    [
      "a graph event",
      { kind: "event", name: "graph.effect_failed", fields: { work_item: "github:github.com/o/r#1", graph: "g", node: "n", effect: "hook", error: "y" } },
    ],
  ])("reads %s back as it was written", (_name, effect) => {
    expect(parseJournalledEffect(JSON.stringify(effect))).toEqual(effect);
  });

  it.each<[string, string]>([
    ["text that is not JSON", "{"],
    ["null", "null"],
    ["a list", "[]"],
    ["an unknown kind", JSON.stringify({ kind: "reboot" })],
    ["a phase label without the one to add", JSON.stringify({ kind: "phase-label", remove: null })],
    ["an assignment with a textual generation", JSON.stringify({ kind: "deliver-assignment", node: "n", generation: "2" })],
    ["a force without an actor", JSON.stringify({ kind: "announce-force", from: null, to: "n", reason: "r" })],
    ["a run's end that is not final", JSON.stringify({ kind: "run-ended", status: "running" })],
    ["a hook at another point", JSON.stringify({ kind: "hook", point: "session_started", node: "n" })],
    ["a loop event at a deciding point", JSON.stringify({ kind: "loop", name: "loop.gate.pre", payload: {} })],
    ["a loop event without a payload", JSON.stringify({ kind: "loop", name: "loop.started" })],
    ["a loop denial at an observed point", JSON.stringify({ kind: "loop-denial", point: "loop.started", hook: "h", reason: "r", node: "n", status: "failed" })],
    ["an event outside the graph family", JSON.stringify({ kind: "event", name: "item.opened", fields: {} })],
    ["an event of no type", JSON.stringify({ kind: "event", name: "graph.nothing", fields: {} })],
    ["a graph event missing a field", JSON.stringify({ kind: "event", name: "graph.effect_failed", fields: { work_item: "w", graph: "g", node: "n" } })],
    [
      "a graph event with a field of the wrong kind",
      JSON.stringify({ kind: "event", name: "graph.effect_failed", fields: { work_item: 1, graph: "g", node: "n", effect: "x", error: "y" } }),
    ],
    [
      "a graph event with a field its catalog lacks",
      JSON.stringify({ kind: "event", name: "graph.effect_failed", fields: { work_item: "w", graph: "g", node: "n", effect: "x", error: "y", extra: 1 } }),
    ],
  ])("drops %s", (_name, text) => {
    expect(parseJournalledEffect(text)).toBeUndefined();
  });
});
