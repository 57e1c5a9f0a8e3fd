import { describe, expect, it } from "vitest";
import type { ControlCommand } from "../../src/config/schema.js";
import { heldForAdoption, turnIntent, whereOwned } from "../../src/dispatch/owned.js";
import type { TakeoverOutcome, TurnIntent } from "../../src/dispatch/owned.js";
import type { SessionRecord } from "../../src/registry/record.js";
import type { SessionRegistry } from "../../src/registry/registry.js";
import type { QueueEntry, StartQueue } from "../../src/registry/start-queue.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import type { Decision } from "../../src/routing/router.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { OwnedElsewhereError } from "../../src/fleet/ownership.js";
import type { Ownership, TakenLease } from "../../src/fleet/ownership.js";

const ITEM = "local:demo#1";
const NOW = new Date("2026-12-03T08:00:00Z");

/** An ownership whose takes answer `answers` in turn: the leases taken from a lost daemon, or the owner that refuses. */
function ownership(answers: (readonly TakenLease[] | string)[]): Ownership & { takes: number } {
  const subject = {
    name: "box-b",
    shared: true,
    takes: 0,
    holds: () => true,
    acquire: async () => {
      const answer = answers[subject.takes++] ?? [];
      if (typeof answer === "string") throw new OwnedElsewhereError(ITEM, answer, undefined, NOW);
      return answer;
    },
  };
  return subject;
}

describe("whereOwned with a takeover", () => {
  const fromLost = [{ item: ITEM, from: "box-a" }];

  it.each<[string, TakeoverOutcome, (readonly TakenLease[] | string)[], boolean, string]>([
    ["adopted here: the job runs on the adopted session", "adopted", [fromLost, []], true, "job"],
    ["nothing to adopt (no active session): the job runs", "none", [fromLost, []], true, "job"],
    ["adopted into the start queue: an event waits, tried again later", "queued", [fromLost], true, "held"],
    ["adopted into the start queue, no event: taken again, and the job runs", "queued", [fromLost, []], false, "job"],
    ["adopted into the start queue and taken by the daemon with room: its work now", "queued", [fromLost, "box-c"], false, "elsewhere"],
  ])("%s", async (_case, outcome, answers, isEvent, expected) => {
    const owner = ownership(answers);
    const adopted: string[] = [];
    const answer = await whereOwned(
      owner,
      new MemoryEventSink(),
      [ITEM],
      async () => "job",
      { value: "elsewhere", ...(isEvent ? { work: "event" as const, held: () => "held" } : {}) },
      async (taken) => {
        adopted.push(`${taken.item} from ${taken.from}`);
        return outcome;
      },
    );
    expect(answer).toBe(expected);
    expect(adopted).toEqual([`${ITEM} from box-a`]);
    expect(owner.takes).toBe(answers.length);
  });

  it("runs no takeover for a lease renewed or taken free", async () => {
    const owner = ownership([[]]);
    let called = false;
    const answer = await whereOwned(
      owner,
      new MemoryEventSink(),
      [ITEM],
      async () => "job",
      undefined,
      async () => {
        called = true;
        return "adopted";
      },
    );
    expect(answer).toBe("job");
    expect(called).toBe(false);
  });
});

describe("turnIntent", () => {
  const item = { ref: ITEM } as WorkItem;
  const other = { ref: "local:demo#2" } as WorkItem;
  const control = (command: ControlCommand, on = item): Decision =>
    ({ action: "control", workItem: on, command, session: "active", armed: true, itemClosed: false }) as Decision;

  it.each<[string, Decision | undefined, TurnIntent | undefined]>([
    ["the item's closing", { action: "close", workItem: item }, "close"],
    ["a stop of the item", control("stop"), "stop"],
    ["a pause: adopted first, then paused", control("pause"), undefined],
    ["a start", control("start"), undefined],
    ["a comment for its agent", { action: "deliver", workItem: item, status: "active" }, undefined],
    ["another item's closing", { action: "close", workItem: other }, undefined],
    ["another item's stop", control("stop", other), undefined],
    ["no decision (a damaged record)", undefined, undefined],
  ])("%s", (_case, decision, expected) => {
    expect(turnIntent(decision, ITEM)).toBe(expected);
  });
});

describe("heldForAdoption", () => {
  const item = { ref: ITEM } as WorkItem;
  const comment = { kind: "commented", deliveryId: "poll-demo:9" } as InboundEvent;
  const entry = (bootNote?: string): QueueEntry => ({
    ref: ITEM,
    harness: "fake",
    queuedAt: NOW.toISOString(),
    ...(bootNote !== undefined ? { bootNote } : {}),
  });

  it.each<[string, InboundEvent, Decision, SessionRecord["status"] | undefined, QueueEntry[], boolean]>([
    ["a comment on an item whose adoption is queued: held", comment, { action: "spawn", workItem: item }, "closed", [entry("adopted from box-a")], true],
    ["one the spawn policy would drop: held", comment, { action: "drop", reason: "spawn-policy", workItem: item }, "closed", [entry("adopted")], true],
    ["a plain queued start (no boot note): decided as it stands", comment, { action: "spawn", workItem: item }, undefined, [entry()], false],
    ["nothing queued", comment, { action: "spawn", workItem: item }, "closed", [], false],
    ["the adopted session runs: delivered", comment, { action: "deliver", workItem: item, status: "active" }, "active", [entry("adopted")], false],
    ["a paused item waits for no one", comment, { action: "drop", reason: "execution-stopped", workItem: item }, "closed", [entry("adopted")], false],
    [
      "a closing is never held",
      { kind: "closed", deliveryId: "x" } as InboundEvent,
      { action: "drop", reason: "no-session", workItem: item },
      "closed",
      [entry("adopted")],
      false,
    ],
  ])("%s", async (_case, event, decision, status, entries, held) => {
    const released: string[] = [];
    const forgotten: string[] = [];
    const answer = await heldForAdoption(contextOf(status, entries, released, forgotten), event, decision);
    expect(answer).toEqual(held ? { settled: false, held: true } : undefined);
    expect(released).toEqual(held ? [ITEM] : []);
    expect(forgotten).toEqual(held ? [event.deliveryId] : []);
  });

  it("looks at nothing on a daemon that shares no state (files): no adoption is ever queued there", async () => {
    let looked = 0;
    const ctx = contextOf("closed", [entry("adopted")], [], [], false);
    ctx.options.startQueue = {
      read: () => {
        looked += 1;
        return [entry("adopted")];
      },
    } as unknown as StartQueue;
    expect(await heldForAdoption(ctx, comment, { action: "spawn", workItem: item })).toBeUndefined();
    expect(looked).toBe(0);
  });

  function contextOf(status: SessionRecord["status"] | undefined, entries: QueueEntry[], released: string[], forgotten: string[], shared = true) {
    return {
      forget: (forgot: InboundEvent) => void forgotten.push(forgot.deliveryId),
      ownership: { ...ownership([]), shared, release: async (ref: string) => void released.push(ref) },
      options: {
        registry: { get: () => (status === undefined ? undefined : ({ status } as SessionRecord)) } as unknown as SessionRegistry,
        startQueue: { read: () => entries } as unknown as StartQueue,
      },
    };
  }
});
