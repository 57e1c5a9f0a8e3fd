import { describe, expect, it } from "vitest";
import { levelOf } from "../../src/events/catalog.js";

describe("the level an event is written at", () => {
  it.each([
    ["the-loop's own echo is debug", { reason: "self-echo", delivery_id: "poll-1", kind: "labeled", actor: "the-loop" }, "debug"],
    ["a refusal of a person stays info", { reason: "unauthorized-actor", delivery_id: "poll-2", kind: "commented", actor: "mallory" }, "info"],
    ["a redelivery stays info", { reason: "duplicate-delivery", delivery_id: "poll-3", kind: "commented" }, "info"],
  ] as const)("routing.dropped: %s", (_what, fields, level) => {
    expect(levelOf("routing.dropped", fields)).toBe(level);
  });

  it("a type without a quieter case keeps its own level", () => {
    expect(levelOf("routing.fail_closed", { hint: "x" })).toBe("warning");
  });
});
