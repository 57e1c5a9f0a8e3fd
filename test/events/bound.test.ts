import { describe, expect, it } from "vitest";
import { bindEvents } from "../../src/events/bound.js";
import { MemoryEventSink } from "../../src/events/log.js";

describe("bindEvents", () => {
  it("adds the bound fields to every emit, and keeps the sink underneath", () => {
    const sink = new MemoryEventSink();
    const events = bindEvents(sink, { work_item: "local:default#1", delivery_id: "d-1" });
    events.emit("dispatch.dropped", { reason: "session-paused" });
    events.emit("dispatch.failed", { action: "deliver", error: "boom", will_retry: true });
    expect(events.sink).toBe(sink);
    expect(events.fields).toEqual({ work_item: "local:default#1", delivery_id: "d-1" });
    expect(sink.events).toEqual([
      { type: "dispatch.dropped", fields: { work_item: "local:default#1", delivery_id: "d-1", reason: "session-paused" } },
      { type: "dispatch.failed", fields: { work_item: "local:default#1", delivery_id: "d-1", action: "deliver", error: "boom", will_retry: true } },
    ]);
  });
});
