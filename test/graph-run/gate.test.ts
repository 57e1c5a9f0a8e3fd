import { describe, expect, it } from "vitest";
import { DEFAULT_GATE_KEYWORDS } from "../../src/config/graph-schema.js";
import { compileGateVocabulary, decideGateInput, gateAnswerOfReview, mergeGateAnswers, parseGateAnswer } from "../../src/graph-run/gate.js";
import type { GateInput, ParsedGate } from "../../src/graph-run/gate.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { GRAPH, applied, started, stateAt } from "../graph/fixture.js";
import { applyClaimResult } from "../../src/graph-run/advance.js";

const defaults = compileGateVocabulary({ ...DEFAULT_GATE_KEYWORDS });

const APPROVE = "the-loop:approve";
const CHANGES = "the-loop:request-changes";

/** "none", the decision, or "ambiguous:<decisions>". */
function summary(parsed: ParsedGate): string {
  switch (parsed.kind) {
    case "none":
      return "none";
    case "answer":
      return parsed.decision;
    case "ambiguous":
      return `ambiguous:${parsed.decisions.join(",")}`;
  }
}

describe("parseGateAnswer", () => {
  it.each<[string, string | null | undefined, string]>([
    ["no body", null, "none"],
    ["an empty body", "", "none"],
    // Prose never decides.
    ["LGTM", "LGTM", "none"],
    ["looks good, ship it", "Looks good to me, ship it!", "none"],
    ["approved", "approved", "none"],
    ["not approved", "not approved", "none"],
    ["request changes in prose", "I request changes: the design misses the migration.", "none"],
    // The keywords, whole tokens, any ASCII case.
    ["the approve keyword", APPROVE, "approved"],
    ["the approve keyword in a sentence", `Read it twice. ${APPROVE}, thanks!`, "approved"],
    ["the approve keyword upper case", APPROVE.toUpperCase(), "approved"],
    ["the request-changes keyword", `${CHANGES}\n\nThe API section needs an error table.`, "changes-requested"],
    ["the same keyword twice", `${APPROVE}\n\n${APPROVE}`, "approved"],
    // Not a whole token.
    ["a keyword inside a word", `x${APPROVE}`, "none"],
    ["a keyword run on", `${APPROVE}d`, "none"],
    ["a keyword in a path", `docs/${APPROVE}`, "none"],
    // Quoted or hidden text never counts.
    ["a quoted approval", `> ${APPROVE}\n\nI am not sure about this.`, "none"],
    ["a quote reply then prose", `> Reply with ${APPROVE} when ready\n\nNot yet.`, "none"],
    ["an approval in a code span", `Type \`${APPROVE}\` to approve.`, "none"],
    ["an approval in a fenced block", `How to answer:\n\n\`\`\`\n${APPROVE}\n\`\`\``, "none"],
    ["an approval in a tilde fence", `~~~md\n${APPROVE}\n~~~`, "none"],
    ["an approval in an HTML comment", `<!-- ${APPROVE} -->`, "none"],
    ["an approval in an indented code block", `Example:\n\n    ${APPROVE}`, "none"],
    // Both answers at once.
    ["both keywords", `${APPROVE} ${CHANGES}`, "ambiguous:approved,changes-requested"],
    ["both keywords, changes first", `${CHANGES}\n\n${APPROVE}`, "ambiguous:approved,changes-requested"],
    ["both, one of them quoted", `> ${CHANGES}\n\n${APPROVE}`, "approved"],
  ])("%s → %s", (_what, body, expected) => {
    expect(summary(parseGateAnswer(body, defaults))).toBe(expected);
  });

  it("reads the configured keywords instead of the defaults", () => {
    const custom = compileGateVocabulary({ approve: "ship-it", requestChanges: "rework" });
    expect(summary(parseGateAnswer("ship-it", custom))).toBe("approved");
    expect(summary(parseGateAnswer("please rework.", custom))).toBe("changes-requested");
    expect(summary(parseGateAnswer(APPROVE, custom))).toBe("none");
  });

  it("refuses a keyword that is not one line of visible text", () => {
    expect(() => compileGateVocabulary({ approve: "a\nb", requestChanges: "rework" })).toThrow(/approved gate keyword/);
  });
});

describe("gateAnswerOfReview", () => {
  it.each<[string | null | undefined, string]>([
    ["APPROVED", "approved"],
    ["approved", "approved"],
    ["CHANGES_REQUESTED", "changes-requested"],
    ["changes_requested", "changes-requested"],
    ["COMMENTED", "none"],
    ["DISMISSED", "none"],
    ["PENDING", "none"],
    [null, "none"],
    [undefined, "none"],
  ])("%s → %s", (state, expected) => {
    expect(summary(gateAnswerOfReview(state))).toBe(expected);
  });

  it("is ambiguous when a review's state and its body disagree", () => {
    const body = parseGateAnswer(CHANGES, defaults);
    expect(summary(mergeGateAnswers(gateAnswerOfReview("APPROVED"), body))).toBe("ambiguous:approved,changes-requested");
    expect(summary(mergeGateAnswers(gateAnswerOfReview("APPROVED"), parseGateAnswer(APPROVE, defaults)))).toBe("approved");
    expect(summary(mergeGateAnswers(gateAnswerOfReview("COMMENTED"), body))).toBe("changes-requested");
    expect(summary(mergeGateAnswers(gateAnswerOfReview("COMMENTED"), parseGateAnswer("LGTM", defaults)))).toBe("none");
  });
});

describe("decideGateInput", () => {
  const waiting = (): GraphState =>
    applied(
      applyClaimResult(GRAPH, started(), {
        node: "design",
        generation: 1,
        results: [],
        actor: { kind: "agent", id: "s" },
        at: new Date("2025-03-01T10:05:00Z"),
      }),
    ).state;
  const input = (fields: Partial<GateInput>): GateInput => ({
    answer: parseGateAnswer(APPROVE, defaults),
    authorized: true,
    author: "alice",
    selfLogin: "octo-operator",
    allowSelfApproval: false,
    state: waiting(),
    graph: GRAPH,
    ...fields,
  });

  it.each<[string, Partial<GateInput>, string]>([
    ["an authorized approval at a waiting gate", {}, "accept:approved"],
    ["an authorized request for changes", { answer: parseGateAnswer(CHANGES, defaults) }, "accept:changes-requested"],
    ["a review's approval", { answer: gateAnswerOfReview("APPROVED") }, "accept:approved"],
    ["prose (LGTM)", { answer: parseGateAnswer("LGTM", defaults) }, "refuse:no-answer"],
    ["a quoted approval", { answer: parseGateAnswer(`> ${APPROVE}`, defaults) }, "refuse:no-answer"],
    ["an unauthorized author", { authorized: false, author: "mallory" }, "refuse:unauthorized"],
    ["an unnamed author", { author: null }, "refuse:unauthorized"],
    ["an unauthorized author, ambiguous", { authorized: false, answer: parseGateAnswer(`${APPROVE} ${CHANGES}`, defaults) }, "refuse:unauthorized"],
    ["the-loop's own login", { author: "octo-operator" }, "refuse:self-authored"],
    ["the-loop's own login in another case", { author: "Octo-Operator" }, "refuse:self-authored"],
    ["the-loop's own login, opted in", { author: "octo-operator", allowSelfApproval: true }, "accept:approved"],
    ["an unknown own login", { author: "octo-operator", selfLogin: null }, "accept:approved"],
    ["both keywords", { answer: parseGateAnswer(`${APPROVE}\n${CHANGES}`, defaults) }, "refuse:ambiguous"],
    ["an agent node at work", { state: started() }, "refuse:not-waiting"],
    ["an item with no run", { state: undefined }, "refuse:not-waiting"],
    ["a done run", { state: stateAt({ status: "done", node: "complete" }) }, "refuse:not-waiting"],
    ["a blocked item", { state: stateAt({ status: "blocked", reasonCode: "max-attempts", reason: "missing" }) }, "accept:approved"],
  ])("%s → %s", (_what, fields, expected) => {
    const decision = decideGateInput(input(fields));
    expect(decision.kind === "accept" ? `accept:${decision.decision}` : `refuse:${decision.reasonCode}`).toBe(expected);
  });

  it("says why in words a person can act on", () => {
    const self = decideGateInput(input({ author: "octo-operator" }));
    expect(self).toMatchObject({ kind: "refuse", reason: expect.stringMatching(/login the-loop posts as.*bot identity.*allowSelfApproval/) });
    const notWaiting = decideGateInput(input({ state: started() }));
    expect(notWaiting).toMatchObject({ kind: "refuse", reason: expect.stringMatching(/nothing waits for a gate answer.*"design"/) });
  });
});
