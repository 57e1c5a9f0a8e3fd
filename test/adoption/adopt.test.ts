import { describe, expect, it } from "vitest";
import { Adopter } from "../../src/adoption/adopt.js";
import type { AdopterOptions } from "../../src/adoption/adopt.js";
import type { ControlOutcome, ControlRequest } from "../../src/control/types.js";
import { MemoryEventSink } from "../../src/events/log.js";
import type { SessionRecord } from "../../src/registry/record.js";
import type { LeaseRow } from "../../src/state/postgres/leases.js";

const NOW = new Date("2026-12-02T12:00:00Z");
const lapsed = (item: string, owner = "box-a", secondsAgo = 60): LeaseRow => ({
  item,
  owner,
  takenAt: NOW,
  expiresAt: new Date(NOW.getTime() - secondsAgo * 1000),
});
const record = (ref: string, status: SessionRecord["status"]): SessionRecord =>
  ({ workItem: { ref }, status, harnessSessionId: `h-${ref}`, tmuxTarget: "loop-x" }) as unknown as SessionRecord;

const STARTED = { applied: true, effect: "started", session: { tmuxTarget: "loop-y", status: "active" } } as const;

function adopter(
  leases: LeaseRow[],
  sessions: Map<string, SessionRecord>,
  taken: (item: string) => boolean = () => true,
  outcome: ControlOutcome = STARTED,
  pullRequestHead?: AdopterOptions["pullRequestHead"],
) {
  const events = new MemoryEventSink();
  const closed: string[] = [];
  const starts: ControlRequest[] = [];
  const comments: string[] = [];
  const warnings: string[] = [];
  const start = async (request: ControlRequest): Promise<ControlOutcome> => {
    starts.push(request);
    return outcome;
  };
  const subject: Adopter = new Adopter({
    leases: { fleet: async () => ({ daemons: [], leases, now: NOW }) },
    tails: { read: async (item) => ({ item, daemon: "box-a", tmuxTarget: "loop-x", tail: "last words", updatedAt: NOW }) },
    ownership: { name: "box-b" },
    graceMs: 15_000,
    session: (ref) => sessions.get(ref),
    closeSession: async (ref, reason) => {
      closed.push(`${ref} ${reason}`);
      sessions.delete(ref);
      return undefined;
    },
    // The dispatcher's turn: the lease taken from its lapsed owner hands the item to adoptTaken; one another daemon took first is left alone.
    takeOver: async (ref) => {
      const lease = leases.find((row) => row.item === ref);
      if (lease !== undefined && taken(ref)) await subject.adoptTaken({ item: ref, from: lease.owner }, start);
    },
    comment: async (ref, text) => void comments.push(`${ref}: ${text}`),
    ...(pullRequestHead !== undefined ? { pullRequestHead } : {}),
    events,
    warn: (message) => void warnings.push(message),
  });
  return { subject, events, closed, starts, comments, start, warnings };
}

describe("Adopter", () => {
  it("adopts an active item past the grace: the old record closed, a start with the note and tail, a comment, session.adopted", async () => {
    const sessions = new Map([["local:demo#1", record("local:demo#1", "active")]]);
    const { subject, events, closed, starts, comments } = adopter([lapsed("local:demo#1")], sessions);
    expect(await subject.once()).toBe(1);
    expect(closed).toEqual(["local:demo#1 adopted"]);
    expect(starts).toEqual([
      expect.objectContaining({ ref: "local:demo#1", command: "start", source: "cli", bootNote: expect.stringContaining("last words") }),
    ]);
    expect(comments).toEqual([expect.stringContaining("`box-b` adopted it")]);
    expect(events.events).toEqual([
      { type: "session.adopted", fields: { work_item: "local:demo#1", daemon: "box-b", from: "box-a", tail_lines: 1, started: true } },
    ]);
  });

  it("says so when the caps queue the new start: the note goes with the start, the comment says it waits", async () => {
    const sessions = new Map([["local:demo#1", record("local:demo#1", "active")]]);
    const { subject, events, starts, comments } = adopter([lapsed("local:demo#1")], sessions, () => true, {
      applied: true,
      effect: "start-pending",
      // What the command path answers for a start the caps queue (command-effects.ts).
      problem: "queued at position 1: routing.limits.maxLiveSessions 2 is reached",
      queued: true,
    });
    expect(await subject.once()).toBe(0);
    expect(starts).toEqual([expect.objectContaining({ bootNote: expect.stringContaining("last words") })]);
    expect(comments).toEqual([expect.stringContaining("waits in the start queue for a free slot")]);
    expect(events.events).toEqual([
      { type: "session.adopted", fields: { work_item: "local:demo#1", daemon: "box-b", from: "box-a", tail_lines: 1, started: false, queued: true } },
    ]);
  });

  it("leaves a paused item paused, one within the grace, and its own", async () => {
    const sessions = new Map([
      ["local:demo#1", record("local:demo#1", "paused")],
      ["local:demo#2", record("local:demo#2", "active")],
      ["local:demo#3", record("local:demo#3", "active")],
    ]);
    const { subject, closed, starts } = adopter([lapsed("local:demo#1"), lapsed("local:demo#2", "box-a", 5), lapsed("local:demo#3", "box-b")], sessions);
    expect(await subject.once()).toBe(0);
    expect(closed).toEqual([]);
    expect(starts).toEqual([]);
  });

  it("does nothing with an item another daemon adopted first", async () => {
    const sessions = new Map([["local:demo#1", record("local:demo#1", "active")]]);
    const { subject, closed, starts, events } = adopter([lapsed("local:demo#1")], sessions, () => false);
    expect(await subject.once()).toBe(0);
    expect(closed).toEqual([]);
    expect(starts).toEqual([]);
    expect(events.events).toEqual([]);
  });

  it("adopts in the turn of an event that took the lease first, and leaves a paused or closed item as it is", async () => {
    const sessions = new Map([
      ["local:demo#1", record("local:demo#1", "active")],
      ["local:demo#2", record("local:demo#2", "paused")],
    ]);
    const { subject, closed, starts, events, start } = adopter([], sessions);
    await subject.adoptTaken({ item: "local:demo#1", from: "box-a" }, start);
    await subject.adoptTaken({ item: "local:demo#2", from: "box-a" }, start);
    await subject.adoptTaken({ item: "local:demo#3", from: "box-a" }, start);
    expect(closed).toEqual(["local:demo#1 adopted"]);
    expect(starts).toEqual([expect.objectContaining({ ref: "local:demo#1", bootNote: expect.stringContaining("box-a") })]);
    expect(events.events.map((event) => [event.type, event.fields.work_item])).toEqual([["session.adopted", "local:demo#1"]]);
    // The look that comes after finds nothing left to adopt.
    expect(await subject.once()).toBe(0);
  });

  it("starts an adopted GitHub item's checkout on its linked pull request's head, and says so; without a head read, on the default branch", async () => {
    const ref = "github:github.com/octo/repo#1";
    const pr = "github:github.com/octo/repo#2";
    const github = (): SessionRecord =>
      ({
        ...record(ref, "active"),
        workItem: { ref, tracker: "github", kind: "issue" },
        workspace: { checkout: "/a/.the-loop/workspaces/x", strategy: "worktree" },
        pullRequests: [{ ref: pr, source: "closing-reference", linkedAt: NOW.toISOString() }],
      }) as unknown as SessionRecord;
    const asked: string[] = [];
    const found = adopter(
      [lapsed(ref)],
      new Map([[ref, github()]]),
      () => true,
      STARTED,
      async (what) => {
        asked.push(what);
        return { headBranch: "health", headInRepository: true, state: "open" };
      },
    );
    expect(await found.subject.once()).toBe(1);
    expect(asked).toEqual([pr]);
    expect(found.starts).toEqual([expect.objectContaining({ ref, branch: "health", bootNote: expect.stringContaining("on the branch `health`") })]);

    const unread = adopter(
      [lapsed(ref)],
      new Map([[ref, github()]]),
      () => true,
      STARTED,
      async () => {
        throw new Error("GitHub answered 502");
      },
    );
    expect(await unread.subject.once()).toBe(1);
    expect(unread.starts).toEqual([expect.not.objectContaining({ branch: expect.anything() })]);
    expect(unread.starts[0]?.bootNote).not.toContain("on the branch");
    expect(unread.warnings).toEqual([expect.stringContaining("GitHub answered 502")]);
  });

  it.each([
    ["close", "item-closed"],
    ["stop", "stopped"],
  ] as const)("starts no agent in a turn whose own work is a %s: it leaves the old record to that work's close", async (intent, closedAs) => {
    const sessions = new Map([["local:demo#1", record("local:demo#1", "active")]]);
    const { subject, closed, starts, comments, events, start } = adopter([], sessions);
    expect(await subject.adoptTaken({ item: "local:demo#1", from: "box-a" }, start, intent)).toBe("none");
    expect(closed).toEqual([]);
    expect(starts).toEqual([]);
    expect(comments).toEqual([]);
    expect(events.events).toEqual([
      { type: "session.adopted", fields: { work_item: "local:demo#1", daemon: "box-b", from: "box-a", tail_lines: 0, started: false, closed_as: closedAs } },
    ]);
  });
});
