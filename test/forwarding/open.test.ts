import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { leaseSettingsOf } from "../../src/forwarding/open.js";

describe("leaseSettingsOf", () => {
  it.each([
    ["the default", {}, { leaseSeconds: 30, heartbeatSeconds: 10, adoptGraceSeconds: 15, forwardWaitSeconds: 30 }],
    [
      "the config's own",
      { leaseSeconds: 6, heartbeatSeconds: 2, adoptGraceSeconds: 8, forwardWaitSeconds: 5 },
      { leaseSeconds: 6, heartbeatSeconds: 2, adoptGraceSeconds: 8, forwardWaitSeconds: 5 },
    ],
  ])("carries the lease, the heartbeat, the adoption grace and the forward wait: %s", (_case, lease, expected) => {
    // Without the grace, a row for a daemon whose lease lapsed a moment ago went to one that could not take the item yet, and back, until it was dropped.
    const config = configSchema.parse({ state: { store: "postgres", url: "postgresql://loop@localhost/x", ...lease } });
    expect(leaseSettingsOf(config.state)).toEqual(expected);
  });
});
