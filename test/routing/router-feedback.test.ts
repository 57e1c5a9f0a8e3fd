import { describe, expect, it } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS, feedbackSchema } from "../../src/config/schema.js";
import type { FeedbackConfig } from "../../src/config/schema.js";
import { ciFailureKey, feedbackFor, isFailingConclusion, isFailingStatus } from "../../src/routing/feedback.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { policyOf, route } from "../../src/routing/router.js";
import type { RegistryView } from "../../src/routing/router.js";
import type { WorkItem } from "../../src/workitem/index.js";

/** routing.feedback, as the router applies it: what is ignored where, and that a CI failure never starts a session. */

const github = (repository: string, number: number, kind: WorkItem["kind"] = "issue", host = "github.com"): WorkItem => ({
  ref: host === "github.com" ? `github:${repository}#${number}` : `github:${host}/${repository}#${number}`,
  tracker: "github",
  host,
  repository,
  number,
  kind,
  url: `https://${host}/${repository}/${kind === "issue" ? "issues" : "pull"}/${number}`,
  id: "",
});
const ISSUE = github("octo/repo", 1);
const PR = github("octo/repo", 5, "pull_request");

function event(overrides: Partial<InboundEvent>): InboundEvent {
  return {
    source: "gh-webhook",
    deliveryId: "d-1",
    kind: "check_failed",
    trackerEvent: "check_run.completed",
    workItems: [ISSUE, PR],
    pullRequest: { ref: PR.ref },
    actor: null,
    body: null,
    labels: ["the-loop: auto-execute"],
    itemState: "open",
    occurredAt: "2026-01-01T00:00:00.000Z",
    excerpt: {},
    check: { source: "check_run", name: "test", conclusion: "failure", headSha: "abc1234", repository: "octo/repo" },
    ...overrides,
  };
}

const live: RegistryView = {
  sessionFor: (ref) => (ref === ISSUE.ref ? { status: "active", recentDeliveries: [] } : undefined),
  controlFor: () => undefined,
};
const none: RegistryView = { sessionFor: () => undefined, controlFor: () => undefined };
const fresh = { has: () => false };

function policy(feedback: Partial<FeedbackConfig> | undefined) {
  return policyOf({
    authorizedUsers: ["alice"],
    spawnOnUnmatched: "always",
    autoExecuteLabel: "the-loop: auto-execute",
    control: { enabled: true, requireStartCommand: false, keywords: DEFAULT_CONTROL_KEYWORDS },
    ...(feedback === undefined ? {} : { feedback: feedbackSchema.parse(feedback) }),
  });
}

const changesRequested = event({ kind: "reviewed", actor: "alice", body: "please fix", reviewState: "changes_requested", check: undefined });

describe("routing.feedback in the router", () => {
  it.each([
    ["no feedback settings", undefined, event({}), "deliver"],
    ["the defaults", {}, event({}), "deliver"],
    ["ciFailed: ignore", { reactions: { ciFailed: "ignore" } }, event({}), "feedback-ignored"],
    ["ciFailed: ignore in another repository", { repositories: { "octo/other": { reactions: { ciFailed: "ignore" } } } }, event({}), "deliver"],
    ["ciFailed: ignore in this repository (any case)", { repositories: { "Octo/Repo": { reactions: { ciFailed: "ignore" } } } }, event({}), "feedback-ignored"],
    [
      "shared ignore, this repository delivers",
      { reactions: { ciFailed: "ignore" }, repositories: { "octo/repo": { reactions: { ciFailed: "deliver" } } } },
      event({}),
      "deliver",
    ],
    ["changesRequested: ignore", { reactions: { changesRequested: "ignore" } }, changesRequested, "feedback-ignored"],
    [
      "changesRequested: ignore spares an approval",
      { reactions: { changesRequested: "ignore" } },
      { ...changesRequested, reviewState: "approved" as const },
      "deliver",
    ],
    ["ciFailed: ignore spares a review", { reactions: { ciFailed: "ignore" } }, changesRequested, "deliver"],
  ] as const)("%s", (_name, feedback, input, expected) => {
    const decision = route(input as InboundEvent, policy(feedback as Partial<FeedbackConfig> | undefined), live, fresh);
    expect(decision.action === "drop" ? decision.reason : decision.action).toBe(expected);
  });

  it("a CI failure without a live session starts none, whatever the spawn policy", () => {
    const decision = route(event({}), policy({}), none, fresh);
    expect(decision).toMatchObject({ action: "drop", reason: "no-session" });
  });

  it("a CI failure has no actor, and passes authorization as a status does", () => {
    const decision = route(event({ actor: null }), policy({}), live, fresh);
    expect(decision).toMatchObject({ action: "deliver", workItem: { ref: ISSUE.ref } });
  });

  it("a CI failure seen before (its content key) is a duplicate", () => {
    const key = ciFailureKey(PR.ref, "abc1234", "test");
    const decision = route(event({ contentKey: key }), policy({}), live, { has: (id) => id === key });
    expect(decision).toMatchObject({ action: "drop", reason: "duplicate-delivery" });
  });
});

describe("the feedback rules", () => {
  it.each([
    ["failure", true],
    ["timed_out", true],
    ["startup_failure", true],
    ["cancelled", false],
    ["action_required", false],
    ["neutral", false],
    ["success", false],
    ["skipped", false],
    ["FAILURE", false],
    [null, false],
  ] as const)("conclusion %s fails: %s", (conclusion, failing) => {
    expect(isFailingConclusion(conclusion)).toBe(failing);
  });

  it.each([
    ["failure", true],
    ["error", true],
    ["pending", false],
    ["success", false],
  ] as const)("status %s fails: %s", (state, failing) => {
    expect(isFailingStatus(state)).toBe(failing);
  });

  it("a repository's own settings win key by key over the shared ones", () => {
    const config = feedbackSchema.parse({
      maxCiFixAttempts: 5,
      repositories: { "octo/repo": { maxCiFixAttempts: 1, reactions: { changesRequested: "ignore" } } },
    });
    expect(feedbackFor(config, ISSUE)).toEqual({ ciFailed: "deliver", changesRequested: "ignore", maxCiFixAttempts: 1, ciLogTailBytes: 16_384 });
    expect(feedbackFor(config, github("octo/other", 1))).toEqual({
      ciFailed: "deliver",
      changesRequested: "deliver",
      maxCiFixAttempts: 5,
      ciLogTailBytes: 16_384,
    });
  });

  it("a repository key that is no repository is a config error", () => {
    expect(() => feedbackSchema.parse({ repositories: { "not a repo!": {} } })).toThrow(/owner\/repo/);
  });
});
