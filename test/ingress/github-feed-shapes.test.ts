import { describe, expect, it } from "vitest";
import { isComment, isIssue, isIssueEvent, isReview, rateLimitOf } from "../../src/ingress/github-feed/rest-shapes.js";

const T = "2026-01-02T03:04:05Z";
const issue = { number: 1, state: "open", updated_at: T, labels: ["a", { name: "b" }], closed_at: null, body: null, extra: { kept: true } };
const comment = { id: 2, created_at: T, updated_at: T, node_id: "IC_1", issue_url: "https://x/issues/1", user: { login: "alice" } };
const review = { id: 3, state: "APPROVED", submitted_at: T, user: null };
const event = { event: "labeled", created_at: T, actor: { login: "bob" }, label: { name: "loop" } };

// The feed reads every field its shapes name (labels, users, URLs) and passes the answer into
// webhook payloads: a guard that passes a field of the wrong type lets a TypeError happen later.
describe("the GitHub feed's guards check every field they claim", () => {
  it.each<[string, (value: unknown) => boolean, unknown, boolean]>([
    ["an issue", isIssue, issue, true],
    ["an issue without optional fields", isIssue, { number: 1, state: "closed", updated_at: T }, true],
    ["an issue with a null label", isIssue, { ...issue, labels: [null] }, false],
    ["an issue whose labels are text", isIssue, { ...issue, labels: "loop" }, false],
    ["an issue with a label name that is a number", isIssue, { ...issue, labels: [{ name: 7 }] }, false],
    ["an issue with a numeric body", isIssue, { ...issue, body: 5 }, false],
    ["an issue with a numeric closed_at", isIssue, { ...issue, closed_at: 5 }, false],
    ["an issue with another state", isIssue, { ...issue, state: "merged" }, false],
    ["an issue with an unreadable updated_at", isIssue, { ...issue, updated_at: "soon" }, false],
    ["null as an issue", isIssue, null, false],
    ["a comment", isComment, comment, true],
    ["a comment whose user is text", isComment, { ...comment, user: "alice" }, false],
    ["a comment whose login is a number", isComment, { ...comment, user: { login: 1 } }, false],
    ["a comment with a numeric issue_url", isComment, { ...comment, issue_url: 1 }, false],
    ["a comment with a numeric node_id", isComment, { ...comment, node_id: 1 }, false],
    ["a review", isReview, review, true],
    ["a review with a numeric submitted_at", isReview, { ...review, submitted_at: 1 }, false],
    ["a review with a numeric state", isReview, { ...review, state: 1 }, false],
    ["a review whose user is text", isReview, { ...review, user: "alice" }, false],
    ["an issue event", isIssueEvent, event, true],
    ["an empty issue event", isIssueEvent, {}, true],
    ["null as an issue event", isIssueEvent, null, false],
    ["an issue event whose label is text", isIssueEvent, { ...event, label: "loop" }, false],
    ["an issue event whose actor is text", isIssueEvent, { ...event, actor: "bob" }, false],
  ])("%s: %s", (_name, guard, value, expected) => {
    expect(guard(value)).toBe(expected);
  });

  it("keeps the answer as it came, unknown keys and all", () => {
    const items: unknown[] = [issue];
    expect(items.filter(isIssue)[0]).toBe(issue);
  });

  it("reads a rate limit's reset and kind off the error", () => {
    const resetAt = new Date(0);
    expect(rateLimitOf({ resetAt, secondary: true })).toEqual({ resetAt, secondary: true });
    expect(rateLimitOf({ resetAt })).toEqual({ resetAt });
    expect(rateLimitOf({ resetAt: "soon" })).toBeUndefined();
    expect(rateLimitOf(null)).toBeUndefined();
  });
});
