import { appendFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeFollowNotice, followEvents } from "../../src/events/follow.js";
import type { FollowNotice } from "../../src/events/follow.js";
import type { EventRecord } from "../../src/events/reader.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { jsonl, record } from "./fixtures.js";

interface Following {
  readonly events: EventRecord[];
  readonly notices: FollowNotice[];
  readonly done: Promise<void>;
  readonly controller: AbortController;
  /** Resolves once the backlog is delivered and every later event counts as new. */
  readonly caughtUp: Promise<void>;
}

function follow(path: string, options: { backlog?: number; types?: string[] } = {}): Following {
  const events: EventRecord[] = [];
  const notices: FollowNotice[] = [];
  const controller = new AbortController();
  const [caughtUp, onCaughtUp] = signalled();
  const done = followEvents(path, { types: options.types }, (r) => events.push(r), controller.signal, {
    backlog: options.backlog,
    intervalMs: 5,
    onNotice: (notice) => notices.push(notice),
    onCaughtUp,
  });
  return { events, notices, done, controller, caughtUp };
}

/** A promise and the function that resolves it (Promise.withResolvers needs Node 22). */
function signalled(): [Promise<void>, () => void] {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((done) => (resolve = done));
  return [promise, resolve];
}

const pids = (events: readonly EventRecord[]): unknown[] => events.map((r) => r.pid);

describe("followEvents", () => {
  it("delivers the last `backlog` matches, then each new match, and resolves when aborted", async () => {
    const path = join(await tempDir(), "events.jsonl");
    await writeFile(path, jsonl(...[1, 2, 3, 4].map((pid) => record({ pid, event: pid === 3 ? "item.closed" : "item.opened" }))));
    const following = follow(path, { backlog: 2, types: ["item.opened"] });
    await waitFor("the backlog", () => (following.events.length >= 2 ? true : undefined));
    expect(pids(following.events)).toEqual([2, 4]);

    await appendFile(path, jsonl(record({ pid: 5, event: "item.closed" }), record({ pid: 6 })));
    await waitFor("the new event", () => (following.events.length >= 3 ? true : undefined));
    expect(pids(following.events)).toEqual([2, 4, 6]);

    following.controller.abort();
    await following.done;
    expect(following.notices).toEqual([]);
  });

  it("with no backlog delivers only what is appended after it started", async () => {
    const path = join(await tempDir(), "events.jsonl");
    await writeFile(path, jsonl(record({ pid: 1 })));
    const following = follow(path);
    await following.caughtUp;
    await appendFile(path, jsonl(record({ pid: 2 })));
    await waitFor("the appended event", () => (following.events.length >= 1 ? true : undefined));
    following.controller.abort();
    await following.done;
    expect(pids(following.events)).toEqual([2]);
  });

  it("waits for a file that does not exist yet and reads all of it once it appears", async () => {
    const path = join(await tempDir(), "events.jsonl");
    const following = follow(path, { backlog: 1 });
    await waitFor("the missing notice", () => (following.notices.length > 0 ? true : undefined));
    await writeFile(path, jsonl(record({ pid: 1 }), record({ pid: 2 })));
    await waitFor("both events", () => (following.events.length >= 2 ? true : undefined));
    following.controller.abort();
    await following.done;
    expect(pids(following.events)).toEqual([1, 2]);
    expect(following.notices).toEqual([{ kind: "missing" }, { kind: "appeared" }]);
  });

  it("reports truncation and malformed lines and keeps going", async () => {
    const path = join(await tempDir(), "events.jsonl");
    await writeFile(path, jsonl(record({ pid: 1 }), record({ pid: 2 })));
    const following = follow(path, { backlog: 10 });
    await waitFor("the backlog", () => (following.events.length >= 2 ? true : undefined));
    await writeFile(path, `not json\n${jsonl(record({ pid: 3 }))}`);
    await waitFor("the event after truncation", () => (following.events.length >= 3 ? true : undefined));
    following.controller.abort();
    await following.done;
    expect(pids(following.events)).toEqual([1, 2, 3]);
    expect(following.notices).toEqual([{ kind: "truncated" }, { kind: "malformed", count: 1 }]);
  });

  it("rejects when the event callback throws, instead of treating it as a read error", async () => {
    const path = join(await tempDir(), "events.jsonl");
    await writeFile(path, "");
    const controller = new AbortController();
    const [caughtUp, onCaughtUp] = signalled();
    const done = followEvents(
      path,
      {},
      () => {
        throw new Error("consumer broke");
      },
      controller.signal,
      { intervalMs: 5, onCaughtUp },
    );
    await caughtUp;
    await appendFile(path, jsonl(record()));
    await expect(done).rejects.toThrow("consumer broke");
  });

  it("reports a path it cannot read as a notice, once, and keeps polling", async () => {
    const dir = await tempDir();
    const following = follow(dir);
    await waitFor("the unreadable notice", () => (following.notices.length > 0 ? true : undefined));
    following.controller.abort();
    await following.done;
    expect(following.notices).toHaveLength(1);
    expect(following.notices[0]?.kind).toBe("unreadable");
  });
});

describe("describeFollowNotice", () => {
  it.each<[FollowNotice, RegExp]>([
    [{ kind: "missing" }, /^no events yet: log\.jsonl does not exist; waiting/],
    [{ kind: "appeared" }, /was created/],
    [{ kind: "removed" }, /was removed/],
    [{ kind: "truncated" }, /was truncated; reading it again from the start/],
    [{ kind: "replaced" }, /was replaced/],
    [{ kind: "malformed", count: 1 }, /^skipped 1 malformed line in log\.jsonl$/],
    [{ kind: "malformed", count: 3 }, /^skipped 3 malformed lines/],
    [{ kind: "unreadable", message: "EACCES" }, /cannot read log\.jsonl: EACCES/],
  ])("%j", (notice, expected) => {
    expect(describeFollowNotice(notice, "log.jsonl")).toMatch(expected);
  });
});
