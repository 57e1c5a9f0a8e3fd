import { describe, expect, it } from "vitest";
import { registryViewOf } from "../../src/routing/router.js";
import type { ControlView, SessionView } from "../../src/routing/router.js";

describe("registryViewOf", () => {
  it("reads each work item's session and control record from the stores it is given, at each call", () => {
    const sessions = new Map<string, SessionView>([["local:default#1", { status: "active", recentDeliveries: ["d-1"] }]]);
    const control = new Map<string, ControlView>();
    const view = registryViewOf({ get: (ref) => sessions.get(ref) }, { get: (ref) => control.get(ref) });
    expect(view.sessionFor("local:default#1")).toEqual({ status: "active", recentDeliveries: ["d-1"] });
    expect(view.controlFor("local:default#1")).toBeUndefined();
    control.set("local:default#1", { command: "stop", source: "cli", actor: "alice" });
    expect(view.controlFor("local:default#1")).toMatchObject({ command: "stop" });
  });
});
