import { describe, expect, it } from "vitest";
import { decideSelfCheck } from "../../src/graph-run/self-check.js";
import type { SelfCheckInput } from "../../src/graph-run/self-check.js";
import type { SelfLogin } from "../../src/trackers/tracker.js";

/** The self-approval guard, failing closed: what an identity allows an answer that would otherwise count. */
const NOW = new Date("2025-06-01T12:00:00.000Z");
const HOLD_MS = 60_000;
const KNOWN: SelfLogin = { kind: "known", login: "the-loop-bot" };
const TRANSIENT: SelfLogin = { kind: "unknown", permanent: false, reason: "GitHub GET /user: 500", fix: "wait" };
const PERMANENT: SelfLogin = { kind: "unknown", permanent: true, reason: "GitHub GET /user: 403", fix: "set integrations.github.selfLogin" };
const ago = (ms: number): string => new Date(NOW.getTime() - ms).toISOString();

describe("decideSelfCheck", () => {
  const base: SelfCheckInput = { identity: KNOWN, allowSelfApproval: false, heldAt: undefined, now: NOW, holdMs: HOLD_MS };
  it.each<[string, Partial<SelfCheckInput>, string]>([
    ["a known login", {}, "take:the-loop-bot"],
    ["a known login, for an answer held before", { heldAt: ago(HOLD_MS * 10) }, "take:the-loop-bot"],
    ["self-approval allowed: no login needed", { identity: PERMANENT, allowSelfApproval: true }, "take:null"],
    ["a transient failure, a new answer", { identity: TRANSIENT }, "hold"],
    ["a transient failure, held within the bound", { identity: TRANSIENT, heldAt: ago(HOLD_MS - 1) }, "hold"],
    ["a transient failure, held to the bound", { identity: TRANSIENT, heldAt: ago(HOLD_MS) }, "refuse:identity-timeout"],
    ["a permanent failure", { identity: PERMANENT }, "refuse:identity-unknown"],
    ["a permanent failure, for an answer held before", { identity: PERMANENT, heldAt: ago(1) }, "refuse:identity-unknown"],
  ])("%s → %s", (_what, input, expected) => {
    const check = decideSelfCheck({ ...base, ...input });
    const got = check.kind === "take" ? `take:${check.selfLogin}` : check.kind === "refuse" ? `refuse:${check.reasonCode}` : "hold";
    expect(got).toBe(expected);
  });

  it("holds until the bound counted from the first hold, and a refusal names the fix", () => {
    const held = decideSelfCheck({ ...base, identity: TRANSIENT, heldAt: ago(10_000) });
    expect(held).toMatchObject({ kind: "hold", until: new Date(NOW.getTime() - 10_000 + HOLD_MS).toISOString() });
    const refused = decideSelfCheck({ ...base, identity: PERMANENT });
    expect(refused.kind === "refuse" && refused.reason).toContain("set integrations.github.selfLogin");
    expect(refused.kind === "refuse" && refused.reason).toContain("403");
  });
});
