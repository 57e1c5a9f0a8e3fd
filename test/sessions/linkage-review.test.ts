import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { LinkedItemCheck } from "../../src/sessions/linkage.js";
import { SessionRegistry } from "../../src/sessions/registry.js";
import type { TrackerSet } from "../../src/trackers/resolve.js";
import { WorkItemNotFoundError } from "../../src/trackers/tracker.js";
import type { Tracker, WorkItemState } from "../../src/trackers/tracker.js";
import { formatWorkItemRef, githubItemUrl, workItemOf } from "../../src/workitem/index.js";
import type { WorkItem, WorkItemRef } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";

/** The existence check of an item guessed from a PR's head branch: what it remembers, and what it costs. */

function item(number: number, kind: "issue" | "pull_request" = "issue"): WorkItem {
  const ref = { tracker: "github", host: "github.com", owner: "octo", repo: "app", number } as const;
  return workItemOf(ref, { kind, url: githubItemUrl(ref, kind), id: `node-${number}` });
}

const PR = item(5, "pull_request");
const GUESS = item(12);

function branchEvent(): InboundEvent {
  return {
    source: "gh-webhook",
    deliveryId: "d",
    kind: "commented",
    trackerEvent: "pull_request_review_comment",
    workItems: [GUESS, PR],
    actor: "alice",
    body: "hi",
    labels: [],
    itemState: "open",
    pullRequest: { ref: PR.ref, headBranch: "issue-12", headInRepository: true },
    linkedBy: { [GUESS.ref]: "branch" },
    occurredAt: "2025-03-01T10:00:00.000Z",
    excerpt: {},
  };
}

/** Answers getItem from `answer`, counting the calls. */
async function check(answer: () => Promise<WorkItemState>) {
  let clock = Date.parse("2025-03-01T10:00:00.000Z");
  const calls: string[] = [];
  const tracker = {
    getItem: async (ref: WorkItemRef) => {
      calls.push(formatWorkItemRef(ref));
      return answer();
    },
  } as unknown as Tracker;
  const trackers = { local: tracker, forRef: () => tracker } as unknown as TrackerSet;
  const events = new MemoryEventSink();
  const registry = new SessionRegistry({ dir: join(await tempDir(), "sessions") });
  const linkCheck = new LinkedItemCheck({ trackers, registry, events, now: () => new Date(clock) });
  return {
    calls,
    events,
    verify: () => linkCheck.verify(branchEvent()),
    advance: (ms: number) => (clock += ms),
  };
}

const found = (): Promise<WorkItemState> => Promise.resolve({ item: GUESS } as WorkItemState);
const missing = (): Promise<WorkItemState> => Promise.reject(new WorkItemNotFoundError(GUESS.ref));
const outage = (): Promise<WorkItemState> => Promise.reject(new Error("GitHub GET /repos/octo/app/issues/12: 502 Bad Gateway"));

describe("LinkedItemCheck (review)", () => {
  it("never remembers a failure to ask as a missing item: the next event asks again, and then believes the answer", async () => {
    let answer = outage;
    const t = await check(() => answer());
    expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    answer = missing;
    expect((await t.verify()).workItems).toEqual([PR]);
    expect(t.calls).toHaveLength(2);
    expect(t.events.events.filter((event) => event.type === "routing.linkage_dropped")).toHaveLength(1);
  });

  it("asks once for an item that exists, however many events follow", async () => {
    const t = await check(found);
    for (let i = 0; i < 5; i++) expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    t.advance(24 * 3600 * 1000);
    expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    expect(t.calls).toHaveLength(1);
  });

  it("believes a missing item for ten minutes, then asks again (the issue may have been opened since)", async () => {
    let answer = missing;
    const t = await check(() => answer());
    expect((await t.verify()).workItems).toEqual([PR]);
    t.advance(9 * 60 * 1000);
    expect((await t.verify()).workItems).toEqual([PR]);
    expect(t.calls).toHaveLength(1);
    answer = found;
    t.advance(2 * 60 * 1000);
    expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    expect(t.calls).toHaveLength(2);
  });
});
