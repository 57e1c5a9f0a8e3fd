import { describe, expect, it } from "vitest";
import { NOTIFY_MOMENTS } from "../../src/config/notify-schema.js";
import { EVENT_CATALOG } from "../../src/events/catalog.js";
import { MOMENT_TABLE, eventTypesOf, momentOfType, noticeOf, oneLine } from "../../src/notify/moments.js";
import type { NotifyKeywords } from "../../src/notify/moments.js";

const KEYWORDS: NotifyKeywords = { approve: "ship:it", requestChanges: "ship:not-yet", start: "go:now", resume: "go:on" };
const REF = "github:octo/repo#7";

describe("the moment of each event type", () => {
  it.each([
    ["graph.waiting", "gate-waiting"],
    ["session.awaiting_input", "question"],
    ["graph.blocked", "blocked"],
    ["graph.stalled", "blocked"],
    ["graph.exhausted", "blocked"],
    ["graph.failed", "blocked"],
    ["session.spawn_failed", "failed-to-start"],
    ["workspace.failed", "failed-to-start"],
    ["session.failed_to_start", "failed-to-start"],
    ["session.budget_exceeded", "budget"],
    ["session.budget_warned", undefined],
    ["ci.gave_up", "ci-gave-up"],
    ["ci.delivered", undefined],
    ["graph.completed", "done"],
    ["graph.advanced", undefined],
    ["session.spawned", undefined],
    ["notify.sent", undefined],
    ["notify.failed", undefined],
    ["no.such_event", undefined],
    ["toString", undefined],
  ])("%s → %s", (type, moment) => {
    expect(momentOfType(type)).toBe(moment);
  });

  it("maps only event types the catalog has, to moments the config offers", () => {
    for (const [type, spec] of Object.entries(MOMENT_TABLE)) {
      expect(Object.hasOwn(EVENT_CATALOG, type), type).toBe(true);
      expect(NOTIFY_MOMENTS).toContain(spec.moment);
    }
  });

  it("lists the events of a moment in table order", () => {
    expect(eventTypesOf("blocked")).toEqual(["graph.blocked", "graph.stalled", "graph.exhausted", "graph.failed"]);
    expect(eventTypesOf("gate-waiting")).toEqual(["graph.waiting"]);
  });
});

describe("the notice of an event", () => {
  const fields = { work_item: REF, graph: "spec-review", node: "review", generation: 1, actor: "alice", actor_kind: "agent" };

  it.each([
    // event, extra fields, the comment that moves it on, the alternative, words the headline holds
    ["graph.waiting", { reason: "awaiting review" }, "ship:it", "ship:not-yet", 'waits for a person at the gate "review"'],
    ["graph.blocked", { reason_code: "max-attempts", reason: "3 failed claims" }, "ship:it", "ship:not-yet", 'is blocked at node "review" (max-attempts)'],
    ["graph.stalled", { reason_code: "no-progress", reason: "quiet" }, "go:now", undefined, "run stalled"],
    ["graph.exhausted", { reason_code: "max-generations", reason: "too many" }, "go:now", undefined, "ran out of generations"],
    ["graph.failed", { reason_code: "hook", reason: "vetoed" }, "go:now", undefined, "run failed"],
    ["session.spawn_failed", { harness: "claude", error: "claude: not found" }, "go:now", undefined, "could not be started"],
    ["workspace.failed", { error: "git clone failed" }, "go:now", undefined, "checkout could not be prepared"],
    ["session.failed_to_start", { harness: "claude", restarts: 3, reason: "the harness exited 3 times" }, "go:now", undefined, "the session failed to start"],
    ["session.awaiting_input", { question: "Which database?", comment_posted: true }, undefined, undefined, "asked a question"],
    ["graph.completed", {}, undefined, undefined, 'is done: its run reached "review"'],
    [
      "session.budget_exceeded",
      { dimension: "tokens", used: 6_200, limit: 6_000, minutes: 3, interrupted: true },
      undefined,
      undefined,
      "reached its tokens budget",
    ],
    ["ci.gave_up", { pull_request: "github:octo/repo#9", check: "test", attempts: 3, commented: true }, undefined, undefined, "CI on github:octo/repo#9"],
  ])("%s: moves on with %s", (event, extra, comment, alternative, headline) => {
    const notice = noticeOf({ event, ts: "2026-12-02T08:00:00.000Z", ...fields, ...extra }, KEYWORDS);
    expect(notice).toBeDefined();
    expect(notice?.workItem).toBe(REF);
    expect(notice?.eventType).toBe(event);
    expect(notice?.at).toBe("2026-12-02T08:00:00.000Z");
    expect(notice?.headline).toContain(headline);
    expect(notice?.action.comment).toBe(comment);
    expect(notice?.action.alternative).toBe(alternative);
    // The sentence a person reads names the exact comment, as configured.
    if (comment !== undefined) expect(notice?.action.say).toContain(`\`${comment}\``);
    if (alternative !== undefined) expect(notice?.action.say).toContain(`\`${alternative}\``);
    for (const word of ["the-loop:approve", "the-loop:start-execution"]) expect(notice?.action.say).not.toContain(word);
  });

  it("carries the question and the reason as the detail, on one line, cleaned and bounded", () => {
    const asked = noticeOf({ event: "session.awaiting_input", work_item: REF, question: "Use\u001b[31m red\u0007?\r\n\tOr   blue?" }, KEYWORDS);
    expect(asked?.detail).toBe("Use red? Or blue?");
    const long = noticeOf({ event: "graph.waiting", ...fields, reason: "x".repeat(5_000) }, KEYWORDS);
    expect(long?.detail?.length).toBe(500);
    expect(long?.detail?.endsWith("…")).toBe(true);
    const none = noticeOf({ event: "graph.completed", ...fields }, KEYWORDS);
    expect(none).not.toHaveProperty("detail");
  });

  it("says the budget's figures and the command that raises it, and the check CI gave up on", () => {
    const budget = noticeOf({ event: "session.budget_exceeded", work_item: REF, dimension: "tokens", used: 6_200, limit: 6_000 }, KEYWORDS);
    expect(budget?.detail).toBe("used 6,200 of a limit of 6,000 tokens");
    expect(budget?.action.say).toContain(`\`the-loop sessions resume --work-item ${REF} --budget +N\``);
    const ci = noticeOf({ event: "ci.gave_up", work_item: REF, pull_request: "github:octo/repo#9", check: "lint\u001b[2J", attempts: 3 }, KEYWORDS);
    expect(ci?.headline).toBe(`CI on github:octo/repo#9 (for ${REF}) failed again after 3 fixes: its session is told no more`);
    expect(ci?.detail).toBe("check: lint");
  });

  it("is none for an event that names no work item, or is no moment", () => {
    expect(noticeOf({ event: "graph.waiting", node: "review" }, KEYWORDS)).toBeUndefined();
    expect(noticeOf({ event: "graph.waiting", work_item: "", node: "review" }, KEYWORDS)).toBeUndefined();
    expect(noticeOf({ event: "graph.advanced", ...fields }, KEYWORDS)).toBeUndefined();
    expect(noticeOf({ event: "hasOwnProperty", work_item: REF }, KEYWORDS)).toBeUndefined();
  });

  it("names a node or a code of hostile length or bytes only as one short line", () => {
    const notice = noticeOf({ event: "graph.waiting", work_item: REF, node: `a\nb${"n".repeat(300)}`, graph: 7 }, KEYWORDS);
    expect(notice?.headline).not.toContain("\n");
    expect(notice?.headline).toContain("(graph ?)");
    expect(notice?.headline.length).toBeLessThan(200);
  });
});

describe("oneLine", () => {
  it.each([
    ["plain", "plain"],
    ["  two\n\nlines  ", "two lines"],
    ["\u001b]0;title\u0007shown", "shown"],
    [42, ""],
    [undefined, ""],
  ])("%j → %j", (input, output) => {
    expect(oneLine(input)).toBe(output);
  });
});
