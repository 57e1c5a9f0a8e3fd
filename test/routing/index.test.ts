import { describe, expect, it } from "vitest";
import * as authz from "../../src/routing/authz.js";
import * as dedupe from "../../src/routing/dedupe.js";
import * as inbound from "../../src/routing/inbound.js";
import * as routing from "../../src/routing/index.js";
import * as router from "../../src/routing/router.js";

describe("routing/index", () => {
  it.each([
    ["inbound", inbound],
    ["authz", authz],
    ["dedupe", dedupe],
    ["router", router],
  ] as const)("re-exports every value of %s", (_name, module) => {
    for (const [key, value] of Object.entries(module)) expect(routing, key).toHaveProperty(key, value);
  });
});
