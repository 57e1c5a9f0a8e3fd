import { existsSync } from "node:fs";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { PidfileHeldError, acquirePidfile, isProcessAlive, processStartTicks, readLiveHolder } from "../../src/daemon/pidfile.js";
import type { PidfileHolder } from "../../src/daemon/pidfile.js";
import { ExitError } from "../../src/errors.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { expectCleanExit, startFixture } from "../state/fixtures/children.js";
import type { FixtureProcess } from "../state/fixtures/children.js";

/**
 * The daemon's single-instance lock, exercised with real processes: other daemons are children
 * running the built module (dist/), holding or racing for the pidfile, and killed with SIGKILL.
 */

const HAS_PROC = existsSync("/proc/self/stat");

// Waits for "go" (unless told to go at once), tries to take the pidfile, prints the outcome as
// JSON, and — if it won — holds it until stdin ends, then releases it and prints "released".
const CONTENDER = `
import { once } from "node:events";
const { acquirePidfile, PidfileHeldError } = await import(${JSON.stringify(pathToFileURL(join(REPO_ROOT, "dist/daemon/pidfile.js")).href)});
const [path, service, mode] = process.argv.slice(2);
process.stdin.resume();
if (mode !== "now") {
  process.stdout.write("ready\\n");
  await once(process.stdin, "data");
}
let lock;
try {
  lock = await acquirePidfile(path, service);
} catch (error) {
  if (!(error instanceof PidfileHeldError)) throw error;
  process.stdout.write(JSON.stringify({ acquired: false, holder: error.holder.pid }) + "\\n");
  process.exit(0);
}
process.stdout.write(JSON.stringify({ acquired: true, pid: process.pid }) + "\\n");
await once(process.stdin, "end");
await lock.release();
process.stdout.write("released\\n");
process.exit(0);
`;

interface Outcome {
  readonly acquired: boolean;
  readonly pid?: number;
  readonly holder?: number;
}

async function contenderScript(): Promise<string> {
  const path = join(await tempDir(), "contender.mjs");
  await writeFile(path, CONTENDER);
  return path;
}

/** A child that has taken the pidfile and holds it until its stdin ends. */
async function startHolder(pidfile: string, service = "poller"): Promise<FixtureProcess> {
  // startFixture resolves its script against test/state/fixtures/; an absolute path stays as it is.
  const holder = startFixture(await contenderScript(), [pidfile, service, "now"]);
  const outcome = JSON.parse(await holder.line((line) => line.startsWith("{"), "its outcome")) as Outcome;
  expect(outcome).toEqual({ acquired: true, pid: holder.child.pid });
  return holder;
}

const holderIn = async (path: string): Promise<PidfileHolder> => JSON.parse(await readFile(path, "utf8")) as PidfileHolder;

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

describe("acquirePidfile", () => {
  it("writes this process as the holder and removes the file on release", async () => {
    const path = join(await tempDir(), "state", "poll.pid");
    const lock = await acquirePidfile(path, "poller");

    expect(lock.holder).toMatchObject({ pid: process.pid, service: "poller" });
    expect(new Date(lock.holder.startedAt).toISOString()).toBe(lock.holder.startedAt);
    if (HAS_PROC) expect(lock.holder.startTicks).toBe(processStartTicks(process.pid));
    expect(await holderIn(path)).toEqual(lock.holder);
    expect(readLiveHolder(path)).toEqual(lock.holder);
    // The guard is short-lived: nothing of it outlives the acquisition.
    expect(await exists(`${path}.lock`)).toBe(false);

    await lock.release();
    expect(await exists(path)).toBe(false);
    expect(readLiveHolder(path)).toBeUndefined();
    await lock.release();
    // And it can be taken again.
    await (await acquirePidfile(path, "poller")).release();
  });

  it("refuses while another live process holds it, naming that process, until it lets go", async () => {
    const path = join(await tempDir(), "poll.pid");
    const holder = await startHolder(path);
    const pid = holder.child.pid ?? 0;

    const error: unknown = await acquirePidfile(path, "poller").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PidfileHeldError);
    expect(error).toBeInstanceOf(ExitError);
    const held = error as PidfileHeldError;
    expect(held).toMatchObject({ exitCode: 1, code: "conflict", holder: { pid, service: "poller" } });
    expect(held.message).toBe(
      `poller is already running (pid ${pid} since ${held.holder.startedAt}; pidfile ${path}); stop it with \`the-loop stop\``,
    );
    expect(readLiveHolder(path)?.pid).toBe(pid);
    // The refusal did not touch the holder's file.
    expect((await holderIn(path)).pid).toBe(pid);

    holder.child.stdin.end();
    await holder.line((line) => line === "released", '"released"');
    await expectCleanExit(holder);
    expect(await exists(path)).toBe(false);
    await (await acquirePidfile(path, "poller")).release();
  });

  it("takes over at once from a holder killed with SIGKILL", async () => {
    const path = join(await tempDir(), "poll.pid");
    const holder = await startHolder(path);
    const pid = holder.child.pid ?? 0;
    holder.child.kill("SIGKILL");
    expect((await holder.exited).signal).toBe("SIGKILL");

    // The dead holder's file is still there, but no guard is: nothing has to go stale first.
    expect((await holderIn(path)).pid).toBe(pid);
    expect(await exists(`${path}.lock`)).toBe(false);
    expect(isProcessAlive(pid)).toBe(false);
    expect(readLiveHolder(path)).toBeUndefined();

    const lock = await acquirePidfile(path, "poller");
    expect((await holderIn(path)).pid).toBe(process.pid);
    await lock.release();
  });

  it.each([
    ["an empty file", ""],
    ["text that is not JSON", "12345 not json"],
    ["JSON without a pid", JSON.stringify({ service: "poller", startedAt: "2025-01-01T00:00:00.000Z" })],
    ["a pid that is not a number", JSON.stringify({ pid: "1", service: "poller", startedAt: "x" })],
    ["a pid of zero", JSON.stringify({ pid: 0, service: "poller", startedAt: "x" })],
    ["JSON that is not an object", "[1, 2]"],
  ])("takes over a pidfile holding %s", async (_case, content) => {
    const path = join(await tempDir(), "poll.pid");
    await writeFile(path, content);
    expect(readLiveHolder(path)).toBeUndefined();
    const lock = await acquirePidfile(path, "poller");
    expect(await holderIn(path)).toEqual(lock.holder);
    await lock.release();
  });

  it("takes over a pidfile that names this very process", async () => {
    const path = join(await tempDir(), "poll.pid");
    await writeFile(path, JSON.stringify({ pid: process.pid, service: "poller", startedAt: "2020-01-01T00:00:00.000Z" }));
    const lock = await acquirePidfile(path, "poller");
    expect((await holderIn(path)).startedAt).toBe(lock.holder.startedAt);
    await lock.release();
  });

  it.runIf(HAS_PROC)("treats a live pid with another start time as reused, hence stale", async () => {
    const path = join(await tempDir(), "poll.pid");
    // A live process that is not a the-loop daemon: the pid a reboot might hand to anyone.
    const bystander = startFixture(await contenderScript(), [join(await tempDir(), "other.pid"), "bystander"]);
    await bystander.line((line) => line === "ready", '"ready"');
    const pid = bystander.child.pid ?? 0;
    const ticks = processStartTicks(pid);
    expect(ticks).toBeTypeOf("number");
    const claim = (startTicks?: number): Promise<void> =>
      writeFile(path, JSON.stringify({ pid, service: "poller", startedAt: "2025-01-01T00:00:00.000Z", startTicks }));

    await claim(ticks);
    expect(readLiveHolder(path)?.pid).toBe(pid);
    await expect(acquirePidfile(path, "poller")).rejects.toBeInstanceOf(PidfileHeldError);
    // Without a start time the pid alone decides.
    await claim(undefined);
    await expect(acquirePidfile(path, "poller")).rejects.toBeInstanceOf(PidfileHeldError);

    await claim((ticks ?? 0) + 1);
    expect(isProcessAlive(pid)).toBe(true);
    expect(isProcessAlive(pid, (ticks ?? 0) + 1)).toBe(false);
    expect(readLiveHolder(path)).toBeUndefined();
    const lock = await acquirePidfile(path, "poller");
    expect((await holderIn(path)).pid).toBe(process.pid);
    await lock.release();

    bystander.child.stdin.end();
    await bystander.exited;
  });

  it("leaves a pidfile alone on release once another process has taken it over", async () => {
    const path = join(await tempDir(), "poll.pid");
    const lock = await acquirePidfile(path, "poller");
    const successor = JSON.stringify({ pid: process.ppid, service: "poller", startedAt: "2025-01-01T00:00:00.000Z" });
    await writeFile(path, successor);
    await lock.release();
    expect(await readFile(path, "utf8")).toBe(successor);
  });

  it("lets exactly one of six racing processes take the pidfile; the others name the winner", async () => {
    const path = join(await tempDir(), "poll.pid");
    const script = await contenderScript();
    const CONTENDERS = 6;
    const contenders = Array.from({ length: CONTENDERS }, () => startFixture(script, [path, "poller"]));
    await Promise.all(contenders.map((contender) => contender.line((line) => line === "ready", '"ready"')));
    for (const contender of contenders) contender.child.stdin.write("go\n");

    const outcomes = await Promise.all(
      contenders.map(async (contender) => JSON.parse(await contender.line((line) => line.startsWith("{"), "its outcome")) as Outcome),
    );
    const winners = outcomes.filter((outcome) => outcome.acquired);
    expect(winners).toHaveLength(1);
    const winner = winners[0]?.pid;
    expect(outcomes.filter((outcome) => !outcome.acquired).map((outcome) => outcome.holder)).toEqual(
      Array.from({ length: CONTENDERS - 1 }, () => winner),
    );
    expect((await holderIn(path)).pid).toBe(winner);

    for (const contender of contenders) contender.child.stdin.end();
    await Promise.all(contenders.map((contender) => expectCleanExit(contender)));
    expect(await exists(path)).toBe(false);
  });
});

describe("readLiveHolder", () => {
  it("is undefined for a missing file", async () => {
    expect(readLiveHolder(join(await tempDir(), "none.pid"))).toBeUndefined();
  });
});

describe("isProcessAlive", () => {
  it.each([0, -1, 1.5, Number.NaN, 2 ** 53])("is false for the impossible pid %s", (pid) => {
    expect(isProcessAlive(pid)).toBe(false);
  });

  it("is true for this process, with or without its start time", () => {
    expect(isProcessAlive(process.pid)).toBe(true);
    expect(isProcessAlive(process.pid, processStartTicks(process.pid))).toBe(true);
  });
});
