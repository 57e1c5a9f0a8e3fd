import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { isProcessAlive } from "../../src/daemon/pidfile.js";
import { MemoryEventSink, parseEventLine } from "../../src/events/index.js";
import { loadPollState } from "../../src/ingress/poll-state.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { isTemporaryName } from "../../src/state/atomic.js";
import { LocalTracker } from "../../src/trackers/local/index.js";
import { workItemSlug } from "../../src/workitem/index.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject, TranscriptEntry } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * docs/sessions.md, "What a crash can do": a `kill -9` of the daemon at any moment, then
 * `the-loop start` — no change is lost, no second session, at most one duplicate delivery per
 * session (the window between the paste and the delivery id reaching the record and the poll
 * state). Here the daemon is killed in the middle of delivering a burst of comments, several
 * times, each time at a different point of the burst.
 */

const BURST = 10;
/**
 * Where each round's kill lands: right after a given number of the burst's deliveries (between
 * two of them: the poll state save, the next prompt), or inside the documented window — the
 * comment is in the pane, its delivery id not yet on the record.
 */
const PLANS: readonly ({ afterDeliveries: number } | "window")[] = [{ afterDeliveries: 1 }, "window", { afterDeliveries: 6 }, "window"];
/** Waits that span a restart: a record lock left by the killed daemon goes stale after 10 s. */
const LONG_WAIT_MS = 45_000;

const run = promisify(execFile);
let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

/** `[crash-2-07]`: fixed width and bracketed, so no token is a substring of another. */
const tokenOf = (round: number, index: number): string => `[crash-${round}-${String(index).padStart(2, "0")}]`;
const TOKEN = /\[crash-\d+-\d{2}\]/g;

/** The harness's input entries; a line still being appended (no newline yet) is left out. */
async function inputs(p: TestProject): Promise<TranscriptEntry[]> {
  const text = await fs.readFile(p.transcriptFile, "utf8").catch(() => "");
  const complete = text.split("\n").slice(0, -1).filter(Boolean);
  return complete.map((line) => JSON.parse(line) as TranscriptEntry).filter((entry) => entry.type === "input");
}

async function seenTokens(p: TestProject): Promise<Set<string>> {
  return new Set((await inputs(p)).flatMap((entry) => entry.text?.match(TOKEN) ?? []));
}

async function daemonPid(p: TestProject): Promise<number> {
  const holder = JSON.parse(await fs.readFile(join(p.root, "poll.pid"), "utf8")) as { pid: number };
  return holder.pid;
}

async function tmuxSessions(socketName: string): Promise<string[]> {
  const { stdout } = await run("tmux", ["-L", socketName, "list-sessions", "-F", "#{session_name}"]);
  return stdout.split("\n").filter(Boolean);
}

/**
 * Every file below `dir`, directories left out. The daemon still runs, so a temporary file or a
 * lock directory may vanish while it is walked: what is gone is left out.
 */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [];
    throw error;
  });
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(path)));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

interface Kill {
  readonly round: number;
  readonly pid: number;
  /** Where the kill was aimed, as last seen before it: after-burst means it came too late. */
  readonly cut: "between" | "window" | "after-burst";
  /** This round's comments in the transcript just after the kill. */
  readonly pastedAtKill: number;
  /** Of those, how many neither the record nor the poll state knew as delivered. */
  readonly unrecorded: number;
  /** The killed daemon's poll state held settled changes past its cursor: a cycle was cut short. */
  readonly midCycle: boolean;
  readonly restartMs: number;
}

describe("the daemon across kill -9 (real tmux, the fake harness)", () => {
  it("loses no comment, repeats at most one per kill, and never starts a second session", { timeout: 180_000 }, async () => {
    project = await testProject();
    const p = project;
    // The daemon's paste files go to its TMPDIR; one killed mid-delivery leaves its files behind,
    // so they go to the project's directory, which the test removes, not to the shared /tmp.
    const daemonEnv = { TMPDIR: join(p.dir, "tmp") };
    await fs.mkdir(daemonEnv.TMPDIR);
    const started = await p.cli(["start", "--json"], daemonEnv);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    const opened = await p.cli(["item", "new", "Task", "--label", ARM, "--as", "alice"]);
    expect(opened.code, opened.stderr).toBe(0);
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe("local:demo#1");
    // The announcement is the daemon's own comment: let it land before the bursts, so no kill
    // interrupts it and every comment after it is alice's.
    await p.waitForEvent("the announcement", (r) => r.event === "session.announced");

    // In this process, so a burst reaches the journal in a few milliseconds rather than one CLI
    // process per comment.
    const tracker = new LocalTracker({ trackerDir: join(p.root, "tracker"), events: new MemoryEventSink() });
    const item = { tracker: "local", project: "demo", number: 1 } as const;
    const registry = new SessionRegistry({ dir: join(p.root, "sessions") });
    const pollStateFile = join(p.root, "sessions", "poll-state.json");
    const tokens: string[] = [];
    const kills: Kill[] = [];
    // Only ever the daemon this test started: `start` names it, the pidfile must agree.
    let expectedPid = jsonOf<{ pid: number }>(started).pid;

    for (const [index, plan] of PLANS.entries()) {
      const round = index + 1;
      const pid = await daemonPid(p);
      expect(pid).toBe(expectedPid);
      expect(isProcessAlive(pid), `the daemon of round ${round} runs`).toBe(true);

      const burst: { token: string; deliveryId: string }[] = [];
      for (let n = 1; n <= BURST; n++) {
        const token = tokenOf(round, n);
        const comment = await tracker.addComment(item, `Step ${token}: carry on.`, "alice");
        const seq = /^demo:c(\d+)$/.exec(comment.id)?.[1];
        expect(seq, `comment id ${comment.id}`).toBeDefined();
        burst.push({ token, deliveryId: `poll-demo:${seq}` });
      }
      tokens.push(...burst.map((b) => b.token));

      const cut = await waitFor(
        `round ${round}: the moment to kill (${JSON.stringify(plan)})`,
        async (): Promise<Kill["cut"] | undefined> => {
          // The transcript first: a paste seen there whose success is not in the log read after
          // it was, at that read, inside the window between the paste and the record.
          const pasted = await seenTokens(p);
          const succeeded = new Set((await p.events()).filter((r) => r.event === "dispatch.succeeded").map((r) => String(r.delivery_id)));
          const done = burst.filter((b) => succeeded.has(b.deliveryId)).length;
          if (done === BURST) return "after-burst";
          if (plan === "window") return burst.some((b) => pasted.has(b.token) && !succeeded.has(b.deliveryId)) ? "window" : undefined;
          return done >= plan.afterDeliveries ? "between" : undefined;
        },
        { timeoutMs: LONG_WAIT_MS, intervalMs: 1 },
      );
      process.kill(pid, "SIGKILL");
      await waitFor(`the killed daemon ${pid} to be gone`, () => (isProcessAlive(pid) ? undefined : true), { timeoutMs: 5_000, intervalMs: 5 });

      // What the kill left: pasted comments whose delivery id is on neither the record nor the
      // poll state are the ones the documented window lets through twice.
      const pasted = await seenTokens(p);
      const record = registry.get("local:demo#1");
      expect(record?.status).toBe("active");
      const pollState = await loadPollState(pollStateFile);
      const handled = new Set(Object.values(pollState.sources).flatMap((source) => source.handled));
      const unrecorded = burst.filter(
        (b) => pasted.has(b.token) && !record?.recentDeliveries.includes(b.deliveryId) && !handled.has(b.deliveryId.slice("poll-".length)),
      );
      expect(unrecorded.length, `round ${round}: pasted but unrecorded ${JSON.stringify(unrecorded)}`).toBeLessThanOrEqual(1);

      // The pidfile still names the killed daemon; `start` must see through it at once.
      const restartAt = Date.now();
      const restarted = await p.cli(["start", "--json"], daemonEnv);
      const restartMs = Date.now() - restartAt;
      expect(restarted.code, restarted.stderr + restarted.stdout).toBe(0);
      const newPid = jsonOf<{ pid: number }>(restarted).pid;
      expect(newPid).not.toBe(pid);
      expect(await daemonPid(p)).toBe(newPid);
      expectedPid = newPid;
      kills.push({
        round,
        pid,
        cut,
        pastedAtKill: burst.filter((b) => pasted.has(b.token)).length,
        unrecorded: unrecorded.length,
        midCycle: handled.size > 0,
        restartMs,
      });
    }
    const report = `kills: ${JSON.stringify(kills)}`;
    // Without one kill landing inside a burst the test proves little; every kill coming after
    // its whole burst was delivered would mean the bursts have become too fast for it.
    expect(
      kills.some((kill) => kill.pastedAtKill < BURST),
      report,
    ).toBe(true);

    // No comment is lost: every token reaches the harness.
    await waitFor(
      "every comment in the transcript",
      async () => {
        const seen = new Set((await inputs(p)).flatMap((entry) => entry.text?.match(TOKEN) ?? []));
        return tokens.every((token) => seen.has(token)) ? true : undefined;
      },
      { timeoutMs: LONG_WAIT_MS, intervalMs: 50 },
    );
    // …and the last daemon has nothing left in flight: a cycle after that found no new change.
    const finalPid = await daemonPid(p);
    const settledFrom = (await p.events()).length;
    await waitFor(
      "an idle poll cycle of the last daemon",
      async () => ((await p.events()).slice(settledFrom).some((r) => r.event === "poll.cycle" && r.pid === finalPid && r.changes === 0) ? true : undefined),
      { timeoutMs: LONG_WAIT_MS, intervalMs: 50 },
    );

    const entries = await inputs(p);
    const delivered = entries.map((entry) => entry.text?.match(TOKEN) ?? []);
    // Each paste carries exactly one comment: none interleaved with another.
    expect(
      delivered.filter((found) => found.length !== 1),
      report,
    ).toEqual([]);
    const order = delivered.map((found) => found[0] ?? "");
    const counts = new Map<string, number>();
    for (const token of order) counts.set(token, (counts.get(token) ?? 0) + 1);
    expect(
      tokens.filter((token) => !counts.has(token)),
      "lost",
    ).toEqual([]);
    expect(
      [...counts.keys()].filter((token) => !tokens.includes(token)),
      "unknown",
    ).toEqual([]);
    const duplicates = [...counts].filter(([, count]) => count > 1);
    const extra = duplicates.reduce((sum, [, count]) => sum + count - 1, 0);
    expect(extra, `duplicates ${JSON.stringify(duplicates)}; ${report}`).toBeLessThanOrEqual(kills.length);
    // Each item's comments keep their order: first deliveries come in the order they were written.
    const firsts = order.filter((token, index) => order.indexOf(token) === index);
    expect(firsts, report).toEqual(tokens);

    // No second session, by every account.
    const events = await p.events();
    const count = (type: string): number => events.filter((r) => r.event === type).length;
    expect(count("session.spawned")).toBe(1);
    expect(count("session.respawned")).toBe(0);
    expect(count("session.spawn_failed")).toBe(0);
    expect((await fs.readFile(p.transcriptFile, "utf8")).split("\n").filter((line) => line.includes('"type":"boot"'))).toHaveLength(1);
    const listed = jsonOf<{ sessions: { workItem: { ref: string }; status: string; tmuxTarget: string }[] }>(await p.cli(["sessions", "list", "--json"]));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status])).toEqual([["local:demo#1", "active"]]);
    expect(await tmuxSessions(p.socketName)).toEqual([listed.sessions[0]?.tmuxTarget]);

    // Whatever the kills interrupted, every state file is whole.
    const files = await filesUnder(p.root);
    // A temporary sibling a kill left behind (`.<name>.<pid>.<hex>.tmp`) is not state: every reader skips it.
    const jsonFiles = files.filter((file) => file.endsWith(".json") && !isTemporaryName(file.split("/").at(-1) ?? ""));
    const unparsable: string[] = [];
    for (const file of [...jsonFiles, join(p.root, "poll.pid")]) {
      try {
        JSON.parse(await fs.readFile(file, "utf8"));
      } catch (error) {
        unparsable.push(`${file}: ${(error as Error).message}`);
      }
    }
    expect(unparsable).toEqual([]);
    for (const expected of [`sessions/${workItemSlug("local:demo#1")}.json`, "sessions/poll-state.json", "poll-status.json"]) {
      expect(jsonFiles, expected).toContain(join(p.root, expected));
    }
    // …and holds what its reader expects, not just JSON.
    const pollState = await loadPollState(join(p.root, "sessions", "poll-state.json"));
    expect(Object.keys(pollState.sources)).toEqual(["local:*"]);
    expect(new SessionRegistry({ dir: join(p.root, "sessions") }).list().problems).toEqual([]);
    const logLines = (await fs.readFile(join(p.root, "logs", "events.jsonl"), "utf8")).split("\n").filter(Boolean);
    expect(logLines.filter((line) => parseEventLine(line) === undefined)).toEqual([]);

    const stopped = await p.cli(["stop"]);
    expect(stopped.code, stopped.stderr).toBe(0);
  });
});
