import { describe, expect, it } from "vitest";
import {
  ARMED_MAX,
  BOUNDARY_IDS_MAX,
  REVIEW_MARKS_MAX,
  WINDOW_ENTRIES,
  advance,
  boundedArmed,
  boundedReviewMarks,
  createdMark,
  isLater,
  isNew,
  laterOf,
  nextCommentsSince,
  nextSince,
  parseCursor,
  reviewMark,
  setListing,
  toGitHubSeconds,
} from "../../src/ingress/github-feed/cursor.js";
import type { ListingCursor, Mark } from "../../src/ingress/github-feed/cursor.js";
import { legacyCursor } from "../../src/ingress/github-feed/legacy.js";
import { isIssue, labelsOf, numberIn, onePage } from "../../src/ingress/github-feed/rest-shapes.js";
import type { RestComment, RestReview } from "../../src/ingress/github-feed/rest-shapes.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";

const T0 = "2025-03-01T10:00:00Z";
const T1 = "2025-03-01T10:00:01Z";
const T2 = "2025-03-01T10:00:02Z";

const comment = (id: number, created: string, updated = created): RestComment => ({ id, created_at: created, updated_at: updated });
const updated = (...times: string[]): { updated_at: string }[] => times.map((time) => ({ updated_at: time }));

describe("times", () => {
  it.each([
    [undefined, T0, T0],
    [T0, T1, T1],
    [T1, T0, T1],
    [T0, T0, T0],
    // Another spelling of the same second is no later.
    [T0, "2025-03-01T10:00:00.000Z", T0],
  ] as const)("laterOf(%s, %s) = %s", (a, b, later) => {
    expect(laterOf(a, b)).toBe(later);
  });

  it.each([
    [T1, T0, true],
    [T0, T1, false],
    [T0, T0, false],
  ] as const)("isLater(%s, %s) = %s", (a, b, later) => {
    expect(isLater(a, b)).toBe(later);
  });

  it.each([
    ["2025-03-01T10:00:00.999Z", T0],
    ["2025-03-01T10:00:00.000Z", T0],
    ["2025-03-01T10:00:01.001Z", T1],
  ])("toGitHubSeconds(%s) = %s", (date, seconds) => {
    expect(toGitHubSeconds(new Date(date))).toBe(seconds);
  });
});

describe("isNew", () => {
  it.each<[Mark, string, number, boolean]>([
    [{}, T0, 1, true],
    [{ at: T1, ids: [1] }, T2, 1, true],
    [{ at: T1, ids: [1] }, T0, 9, false],
    [{ at: T1, ids: [1] }, T1, 1, false],
    [{ at: T1, ids: [1] }, T1, 2, true],
    [{ at: T1 }, T1, 2, true],
    [{ at: T1, ids: [] }, T1, 2, true],
  ])("%j, entry %s #%s → %s", (mark, at, id, fresh) => {
    expect(isNew(mark, at, id)).toBe(fresh);
  });
});

describe("advance", () => {
  it.each<[Mark, string, number, Mark]>([
    [{}, T0, 1, { at: T0, ids: [1] }],
    [{ at: T0, ids: [1] }, T1, 2, { at: T1, ids: [2] }],
    [{ at: T1, ids: [2] }, T0, 3, { at: T1, ids: [2] }],
    [{ at: T1, ids: [2] }, T1, 3, { at: T1, ids: [2, 3] }],
    [{ at: T1, ids: [2] }, T1, 2, { at: T1, ids: [2] }],
    [{ at: T1 }, T1, 4, { at: T1, ids: [4] }],
  ])("%j + %s #%s → %j", (mark, at, id, next) => {
    expect(advance(mark, at, id)).toEqual(next);
  });

  it("keeps the newest ids of one second, at most BOUNDARY_IDS_MAX", () => {
    let mark: Mark = {};
    for (let id = 1; id <= BOUNDARY_IDS_MAX + 5; id++) mark = advance(mark, T0, id);
    expect(mark.ids).toHaveLength(BOUNDARY_IDS_MAX);
    expect(mark.ids?.[0]).toBe(6);
    expect(mark.ids?.at(-1)).toBe(BOUNDARY_IDS_MAX + 5);
  });
});

describe("createdMark", () => {
  it.each<[RestComment[], Mark]>([
    [[], {}],
    [[comment(3, T1)], { at: T1, ids: [3] }],
    // Newest first by update: the boundary is the newest update, with what was created in it.
    [[comment(3, T0, T2), comment(5, T2), comment(4, T1)], { at: T2, ids: [5] }],
    [[comment(3, T0, T2), comment(4, T1)], { at: T2, ids: [] }],
  ])("%j → %j", (entries, mark) => {
    expect(createdMark(entries)).toEqual(mark);
  });
});

describe("reviewMark", () => {
  const review = (id: number, submitted: string | null): RestReview => ({ id, submitted_at: submitted });
  it.each<[Mark, RestReview[], Mark]>([
    [{}, [], {}],
    [{}, [review(1, T0), review(2, T1), review(3, T1)], { at: T1, ids: [2, 3] }],
    // An unsubmitted (pending) review has no time and does not move the boundary.
    [{ at: T0, ids: [1] }, [review(2, null)], { at: T0, ids: [1] }],
    [{ at: T2, ids: [9] }, [review(1, T0)], { at: T2, ids: [9] }],
  ])("%j + %j → %j", (mark, reviews, next) => {
    expect(reviewMark(mark, reviews)).toEqual(next);
  });
});

describe("nextSince", () => {
  const many = (count: number, time: string): { updated_at: string }[] => Array.from({ length: count }, () => ({ updated_at: time }));
  it.each<[string | undefined, { updated_at: string }[], boolean, string | undefined]>([
    // Short answers keep `since`, so its ETag keeps matching.
    [T0, updated(T1, T2), false, T0],
    [undefined, updated(T1), false, undefined],
    // A cut answer moves it up to the newest entry.
    [T0, updated(T1, T2), true, T2],
    [T2, updated(T1), true, T2],
    [undefined, [], true, undefined],
    // So does a long one.
    [T0, [...many(WINDOW_ENTRIES - 1, T1), { updated_at: T2 }], false, T2],
    [T0, many(WINDOW_ENTRIES - 1, T1), false, T0],
  ])("%s after %j (cut: %s) → %s", (current, entries, truncated, next) => {
    expect(nextSince(current, entries, truncated)).toBe(next);
  });
});

describe("nextCommentsSince", () => {
  it.each<[string | undefined, RestComment[], boolean, string | undefined]>([
    // Cut: resume at the last one created, not at the newest update.
    [T0, [comment(1, T1, T2), comment(2, T1)], true, T1],
    [undefined, [comment(1, T1)], true, T1],
    // Cut within comments created before `since` (edits of old ones): the newest update.
    [T1, [comment(1, T0, T2), comment(2, T0, T1)], true, T2],
    // Not cut: as nextSince.
    [T0, [comment(1, T1, T2)], false, T0],
    [T0, [], true, T0],
  ])("%s after %j (cut: %s) → %s", (current, entries, truncated, next) => {
    expect(nextCommentsSince(current, entries, truncated)).toBe(next);
  });
});

describe("setListing", () => {
  it.each<[ListingCursor, string | undefined, string | undefined, ListingCursor]>([
    [{ since: T0 }, '"e1"', T0, { since: T0, etag: '"e1"' }],
    // An ETag answers one exact request: with `since` moved it is dropped.
    [{ since: T0, etag: '"e0"' }, '"e1"', T1, { since: T1 }],
    [{ since: T0, etag: '"e0"' }, undefined, T0, { since: T0 }],
    [{ etag: '"e0"' }, '"e1"', undefined, { etag: '"e1"' }],
    [{ since: T0 }, undefined, undefined, {}],
  ])("%j with etag %s, since %s → %j", (cursor, etag, since, next) => {
    const copy = { ...cursor };
    setListing(copy, etag, since);
    expect(copy).toEqual(next);
  });
});

describe("bounds", () => {
  it("keeps the highest armed numbers, sorted", () => {
    expect(boundedArmed(new Set([5, 1, 3]))).toEqual([1, 3, 5]);
    const armed = boundedArmed(new Set(Array.from({ length: ARMED_MAX + 2 }, (_, i) => ARMED_MAX + 2 - i)));
    expect(armed).toHaveLength(ARMED_MAX);
    expect(armed[0]).toBe(3);
  });

  it("keeps the newest review marks", () => {
    const small = { "1": { at: T0 } };
    expect(boundedReviewMarks(small)).toBe(small);
    const marks: Record<string, Mark> = { old: {} };
    for (let i = 0; i < REVIEW_MARKS_MAX; i++) marks[String(i)] = { at: new Date(Date.parse(T0) + i * 1000).toISOString() };
    const kept = boundedReviewMarks(marks);
    expect(Object.keys(kept)).toHaveLength(REVIEW_MARKS_MAX);
    // A mark without a time is the oldest.
    expect(kept).not.toHaveProperty("old");
  });
});

describe("parseCursor", () => {
  const repo = { items: { closed: {} }, comments: { created: {} }, reviewComments: { created: {} }, armed: null, reviews: {} };

  it("reads a cursor back", () => {
    const cursor = { v: 1, repos: { "octo/repo": repo } };
    expect(parseCursor(JSON.stringify(cursor))).toEqual(cursor);
  });

  it.each([
    ["not json", /is not JSON/],
    [JSON.stringify({ v: 2, repos: {} }), /not one this version reads/],
    [JSON.stringify({ v: 1, repos: { "octo/repo": { ...repo, armed: "x" } } }), /not one this version reads/],
  ])("refuses %s with the fix", (text, message) => {
    expect(() => parseCursor(text)).toThrow(message);
    expect(() => parseCursor(text)).toThrow(/move the poll state file aside/);
  });
});

describe("legacyCursor", () => {
  const item = (ref: string, lastPolledAt: string, seenComments: string[] = []) => ({
    ref: parseWorkItemRef(ref),
    lastPolledAt: new Date(lastPolledAt),
    seenComments,
  });
  const source = { host: "github.com", repos: ["octo/repo", "octo/web"], label: "the-loop" };

  it("resumes every repository at the latest look, skipping what was forwarded", () => {
    const ledger = {
      items: [
        item("github:octo/repo#1", "2025-03-01T10:00:00.500Z", ["IC_1"]),
        item("github:octo/web#2", "2025-03-01T10:00:02.250Z", ["IC_2"]),
        item("github:octo/other#3", "2025-03-01T11:00:00Z", ["IC_3"]),
        item("github:ghe.example.com/octo/repo#4", "2025-03-01T12:00:00Z", ["IC_4"]),
      ],
    };
    const cursor = parseCursor(legacyCursor(ledger, source) ?? "");
    expect(Object.keys(cursor.repos)).toEqual(["octo/repo", "octo/web"]);
    expect(cursor.repos["octo/web"]).toEqual({
      items: { since: T2, seen: T2, closed: { at: T2, ids: [] } },
      comments: { since: T2, created: { at: T2, ids: [] } },
      reviewComments: { since: T2, created: { at: T2, ids: [] } },
      armed: null,
      reviews: {},
      skip: ["IC_1", "IC_2"],
    });
  });

  it.each([
    ["knows none of its repositories", { items: [item("github:octo/other#1", T0)] }, source],
    ["is empty", { items: [] }, source],
  ])("is nothing when the ledger %s", (_what, ledger, from) => {
    expect(legacyCursor(ledger, from)).toBeUndefined();
  });

  it("knows every item is armed-or-not when every item is watched", () => {
    const cursor = parseCursor(legacyCursor({ items: [item("github:octo/repo#1", T0)] }, { ...source, label: null }) ?? "");
    expect(cursor.repos["octo/repo"]?.armed).toEqual([]);
    expect(cursor.repos["octo/repo"]).not.toHaveProperty("skip");
  });
});

describe("REST shapes", () => {
  it.each([
    [{ number: 1, state: "open", updated_at: T0 }, true],
    [{ number: 1, state: "merged", updated_at: T0 }, false],
    [{ number: 1, state: "open", updated_at: "yesterday" }, false],
    [{ state: "open", updated_at: T0 }, false],
    [null, false],
  ])("isIssue(%j) = %s", (value, expected) => {
    expect(isIssue(value)).toBe(expected);
  });

  it("names an item's labels, whichever way they are given", () => {
    expect(labelsOf({ labels: ["a", { name: "b" }, {}, { name: "" }, ""] })).toEqual(["a", "b"]);
    expect(labelsOf({})).toEqual([]);
  });

  it.each([
    ["https://api.github.com/repos/o/r/issues/12", "issues", 12],
    ["https://api.github.com/repos/o/r/pulls/7", "pulls", 7],
    ["https://api.github.com/repos/o/r/pulls/7", "issues", undefined],
    [undefined, "issues", undefined],
  ] as const)("numberIn(%s, %s) = %s", (url, section, number) => {
    expect(numberIn(url, section)).toBe(number);
  });

  it("keeps a listing's ETag only when the answer fits on one page", () => {
    expect(onePage({ items: [1], etag: '"e"', truncated: false })).toBe('"e"');
    expect(onePage({ items: Array.from({ length: 100 }), etag: '"e"', truncated: false })).toBeUndefined();
    expect(onePage({ items: [1], etag: '"e"', truncated: true })).toBeUndefined();
  });
});
