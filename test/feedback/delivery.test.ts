import { describe, expect, it } from "vitest";
import type { CiStep } from "../../src/feedback/attempts.js";
import { ciLogPlan, ciVerdict, prepareCiFailure, pullRequestOf } from "../../src/feedback/delivery.js";
import type { CiDeliveryPort, CiTurnEvents } from "../../src/feedback/delivery.js";
import type { InboundCheck, InboundEvent } from "../../src/routing/inbound.js";
import { SELF_COMMENT_MARKER } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";

const item = (ref: string, url = ""): WorkItem => ({ ref, tracker: "github", kind: "pull_request", url, id: "" }) as WorkItem;
const issue = item("github:octo/repo#1");
const pull = item("github:octo/repo#5", "https://github.com/octo/repo/pull/5");

describe("the CI delivery's decisions", () => {
  it.each([
    ["deliver", { kind: "deliver" }],
    ["duplicate", { kind: "drop", reason: "already-processed" }],
    ["given-up", { kind: "drop", reason: "ci-gave-up" }],
    ["give-up", { kind: "give-up" }],
  ] as const)("a claim's step %s: %o", (step: CiStep, verdict) => {
    expect(ciVerdict(step)).toEqual(verdict);
  });

  it.each([
    ["the event's pull request", [issue, pull], pull.ref, pull.ref],
    ["the last item when the event names none", [pull, issue], undefined, issue.ref],
    ["the last item when the named one is not among them", [issue], "github:octo/repo#9", issue.ref],
    ["none without items", [], undefined, undefined],
  ] as const)("the pull request: %s", (_name, workItems, named, expected) => {
    const event = { workItems: [...workItems], ...(named === undefined ? {} : { pullRequest: { ref: named } }) };
    expect(pullRequestOf(event)?.ref).toBe(expected);
  });

  const base: InboundCheck = { source: "check_run", name: "test", conclusion: "failure", repository: "octo/repo", jobId: 7 };
  it.each<[string, InboundCheck | undefined, number, boolean, ReturnType<typeof ciLogPlan>]>([
    ["no check", undefined, 100, true, { kind: "none", reason: "the check carries none" }],
    ["not allowed, whatever else", { ...base, log: "x", logAllowed: false, logWithheld: "mallory" }, 100, true, { kind: "withheld", reason: "mallory" }],
    ["allowed unset is not allowed", { ...base }, 100, true, { kind: "withheld", reason: "its pull request's author is not authorized" }],
    ["a tail of 0 bytes", { ...base, logAllowed: true }, 0, true, { kind: "none", reason: "routing.feedback.ciLogTailBytes is 0" }],
    [
      "a log the check carries (the local tracker's)",
      { ...base, logAllowed: true, log: "\u001b[31mboom\u001b[0m\n" },
      100,
      true,
      { kind: "tail", text: "boom" },
    ],
    [
      "not a job of Actions",
      { source: "status", name: "ci/x", conclusion: "error", repository: "octo/repo", logAllowed: true },
      100,
      true,
      { kind: "none", reason: "the check is not a GitHub Actions job, whose log the-loop could read; open its details" },
    ],
    ["no GitHub tracker", { ...base, logAllowed: true }, 100, false, { kind: "none", reason: "no GitHub tracker is configured" }],
    ["a job's log to read", { ...base, logAllowed: true }, 100, true, { kind: "fetch", repository: "octo/repo", jobId: 7 }],
  ])("the log part: %s", (_name, check, maxBytes, canRead, plan) => {
    expect(ciLogPlan(check, maxBytes, canRead)).toEqual(plan);
  });
});

/** A port over memory: the count as the store keeps it, the logs read, the comments posted, the events emitted. */
function memoryPort(options: { readonly log?: string; readonly failComment?: boolean } = {}) {
  const delivered = new Set<string>();
  let attempts = 0;
  let gaveUp = false;
  const emitted: Array<{ type: string; fields: unknown }> = [];
  const comments: Array<{ ref: string; body: string }> = [];
  const reads: Array<{ repository: string; jobId: number }> = [];
  const port: CiDeliveryPort = {
    attempts: {
      claim: async (_pull, key, max) => {
        if (delivered.has(key)) return { step: "duplicate", attempts };
        if (gaveUp) return { step: "given-up", attempts };
        if (attempts >= max) {
          gaveUp = true;
          return { step: "give-up", attempts };
        }
        delivered.add(key);
        attempts += 1;
        return { step: "deliver", attempts };
      },
      forget: async (_pull, key) => {
        if (delivered.delete(key)) attempts -= 1;
      },
    },
    jobLog: async (repository, jobId) => {
      reads.push({ repository, jobId });
      return options.log === undefined ? undefined : Buffer.from(options.log);
    },
    postComment: async (ref, body) => {
      if (options.failComment === true) throw new Error("GitHub said no");
      comments.push({ ref, body });
    },
    events: { emit: (type: string, fields: unknown) => emitted.push({ type, fields }) } as unknown as CiDeliveryPort["events"],
    now: () => new Date("2026-01-01T00:00:00Z"),
  };
  const turnEvents = {
    fields: { work_item: issue.ref, delivery_id: "d" },
    sink: port.events,
    emit: (type: string, fields: unknown) => emitted.push({ type, fields: { work_item: issue.ref, delivery_id: "d", ...(fields as object) } }),
  } as unknown as CiTurnEvents;
  return { port, turnEvents, emitted, comments, reads, count: () => attempts };
}

function failure(key: string, check: Partial<InboundCheck> = {}): InboundEvent {
  return {
    source: "gh-webhook",
    deliveryId: `d-${key}`,
    kind: "check_failed",
    trackerEvent: "check_run.completed",
    workItems: [issue, pull],
    actor: null,
    body: null,
    labels: [],
    itemState: "open",
    pullRequest: { ref: pull.ref },
    check: { source: "check_run", name: key, conclusion: "failure", repository: "octo/repo", jobId: 7, logAllowed: true, ...check },
    contentKey: `ci:${pull.ref}@abc:${key}`,
    occurredAt: "2026-01-01T00:00:00Z",
    excerpt: {},
  };
}

describe("a CI failure prepared for its session", () => {
  const input = (event: InboundEvent, turnEvents: CiTurnEvents, max = 2) => ({
    event,
    workItem: issue,
    turnEvents,
    feedback: { reactions: { ciFailed: "deliver", changesRequested: "deliver" }, maxCiFixAttempts: max, ciLogTailBytes: 1000, repositories: {} } as never,
    askCommand: "the-loop ask --work-item x",
  });

  it("tells each failure once, up to the limit, then asks a person once with a marked comment", async () => {
    const world = memoryPort({ log: "2026-01-01T00:00:00Z boom\n" });
    const first = await prepareCiFailure(world.port, input(failure("a"), world.turnEvents));
    expect(first.kind).toBe("deliver");
    if (first.kind !== "deliver") return;
    expect(first.text).toContain("This is CI failure 1 of at most 2");
    expect(first.text).toMatch(/BEGIN UNTRUSTED CI LOG [0-9a-f]{16} -----\nboom\n/);
    expect(world.reads).toEqual([{ repository: "octo/repo", jobId: 7 }]);
    first.delivered();
    expect(world.emitted.at(-1)).toEqual({
      type: "ci.delivered",
      fields: { work_item: issue.ref, delivery_id: "d", pull_request: pull.ref, check: "a", conclusion: "failure", attempt: 1, max_attempts: 2, log: "tail" },
    });

    expect(await prepareCiFailure(world.port, input(failure("a"), world.turnEvents))).toEqual({ kind: "drop", reason: "already-processed" });
    expect((await prepareCiFailure(world.port, input(failure("b"), world.turnEvents))).kind).toBe("deliver");
    expect(await prepareCiFailure(world.port, input(failure("c"), world.turnEvents))).toEqual({ kind: "settled" });
    expect(world.comments).toHaveLength(1);
    expect(world.comments[0]?.ref).toBe(pull.ref);
    expect(world.comments[0]?.body).toContain(SELF_COMMENT_MARKER);
    expect(world.comments[0]?.body).toContain("was told of 2 CI failures");
    expect(world.emitted.at(-1)).toEqual({
      type: "ci.gave_up",
      fields: { work_item: issue.ref, pull_request: pull.ref, check: "c", attempts: 2, commented: true },
    });
    expect(await prepareCiFailure(world.port, input(failure("d"), world.turnEvents))).toEqual({ kind: "drop", reason: "ci-gave-up" });
    expect(world.comments).toHaveLength(1);
  });

  it("hands a claim back when its paste did not happen, so its retry is told", async () => {
    const world = memoryPort();
    const first = await prepareCiFailure(world.port, input(failure("a"), world.turnEvents));
    if (first.kind !== "deliver") throw new Error(`expected a delivery, got ${first.kind}`);
    expect(world.count()).toBe(1);
    await first.release();
    expect(world.count()).toBe(0);
    expect((await prepareCiFailure(world.port, input(failure("a"), world.turnEvents))).kind).toBe("deliver");
  });

  it("never reads a withheld log, and says why there is none", async () => {
    const world = memoryPort({ log: "secret" });
    const prepared = await prepareCiFailure(world.port, input(failure("a", { logAllowed: false, logWithheld: "opened by mallory" }), world.turnEvents));
    if (prepared.kind !== "deliver") throw new Error(`expected a delivery, got ${prepared.kind}`);
    expect(world.reads).toEqual([]);
    expect(prepared.text).toContain("No log is included: opened by mallory.");
    expect(prepared.text).not.toContain("secret");
  });

  it("reports a comment that could not be posted, and still gives up once", async () => {
    const world = memoryPort({ failComment: true });
    await prepareCiFailure(world.port, input(failure("a"), world.turnEvents, 0));
    expect(world.emitted.map((e) => e.type)).toEqual(["dispatch.failed", "ci.gave_up"]);
    expect(world.emitted[1]?.fields).toMatchObject({ commented: false });
  });
});
