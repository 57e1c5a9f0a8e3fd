import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, stat, symlink, unlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { lockSocketFor } from "../../src/daemon/lock-socket.js";
import { PidfileHeldError, acquirePidfile, isProcessAlive, processStartTicks, readLock } from "../../src/daemon/pidfile.js";
import type { PidfileHolder } from "../../src/daemon/pidfile.js";
import { ExitError } from "../../src/errors.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { expectCleanExit, startFixture } from "../state/fixtures/children.js";
import type { FixtureProcess } from "../state/fixtures/children.js";

/**
 * The daemon's single-instance lock, exercised with real processes: other daemons are children
 * running the built module (dist/), holding or racing for the lock, and killed with SIGKILL.
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

/** Who holds the lock on `path`, as `status` and `stop` learn it. */
const heldBy = async (path: string): Promise<PidfileHolder | undefined> => (await readLock(path))?.holder;

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
    expect(await heldBy(path)).toEqual(lock.holder);
    // The guard is short-lived: nothing of it outlives the acquisition.
    expect(await exists(`${path}.lock`)).toBe(false);

    await lock.release();
    expect(await exists(path)).toBe(false);
    expect(await readLock(path)).toBeUndefined();
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
    expect(held.message).toBe(`poller is already running (pid ${pid} since ${held.holder?.startedAt ?? ""}; pidfile ${path}); stop it with \`the-loop stop\``);
    expect((await heldBy(path))?.pid).toBe(pid);
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
    expect(await readLock(path)).toBeUndefined();

    const lock = await acquirePidfile(path, "poller");
    expect((await holderIn(path)).pid).toBe(process.pid);
    await lock.release();
  });

  // What a person, a script or a full disk may do to a running holder's pidfile.
  it.each<[string, (path: string) => Promise<void>]>([
    ["random bytes", (path) => writeFile(path, randomBytes(64))],
    ["nothing (deleted)", (path) => unlink(path)],
    [
      "another live process, as an earlier version wrote it",
      (path) => writeFile(path, JSON.stringify({ pid: process.pid, service: "poller", startedAt: "2025-01-01T00:00:00.000Z" })),
    ],
  ])("refuses while the holder's pidfile holds %s, naming the holder, which then puts its pidfile right", async (_case, damage) => {
    const path = join(await tempDir(), "poll.pid");
    const holder = await startHolder(path);
    const recorded = await holderIn(path);
    expect(recorded).toMatchObject({ pid: holder.child.pid, socket: lockSocketFor(path).shown });

    await damage(path);
    const error: unknown = await acquirePidfile(path, "poller").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PidfileHeldError);
    expect((error as PidfileHeldError).holder).toEqual(recorded);
    await waitFor("the holder to rewrite its pidfile", async () => (await holderIn(path).catch(() => undefined))?.pid === recorded.pid || undefined);

    await damage(path);
    expect(await heldBy(path)).toEqual(recorded);
    await waitFor("the holder to rewrite its pidfile again", async () => (await holderIn(path).catch(() => undefined))?.pid === recorded.pid || undefined);
    expect(await holderIn(path)).toEqual(recorded);

    holder.child.stdin.end();
    await holder.line((line) => line === "released", '"released"');
    await expectCleanExit(holder);
    expect(await readLock(path)).toBeUndefined();
  });

  it("takes over at once from a holder killed with SIGKILL whose pidfile was damaged", async () => {
    const path = join(await tempDir(), "poll.pid");
    const holder = await startHolder(path);
    await writeFile(path, randomBytes(64));
    holder.child.kill("SIGKILL");
    expect((await holder.exited).signal).toBe("SIGKILL");

    expect(await readLock(path)).toBeUndefined();
    const lock = await acquirePidfile(path, "poller");
    expect(await holderIn(path)).toEqual(lock.holder);
    expect(await heldBy(path)).toEqual(lock.holder);
    await lock.release();
  });

  it("treats a pidfile left by a holder that listened as stale once nobody listens, whatever process it names", async () => {
    const path = join(await tempDir(), "poll.pid");
    // The parent lives, as a reused pid would on a system without /proc to tell it apart.
    const left = { pid: process.ppid, service: "poller", startedAt: "2025-01-01T00:00:00.000Z", socket: lockSocketFor(path).shown };
    await writeFile(path, JSON.stringify(left));
    expect(isProcessAlive(process.ppid)).toBe(true);
    expect(await readLock(path)).toBeUndefined();
    const lock = await acquirePidfile(path, "poller");
    expect((await holderIn(path)).pid).toBe(process.pid);
    await lock.release();
  });

  // Any local account may listen on an abstract name first; what it says about itself is checked.
  it.runIf(process.platform === "linux" && existsSync("/proc/net/unix")).each([
    ["names a process that does not hold the socket", JSON.stringify({ pid: process.ppid, service: "poller", startedAt: "2025-01-01T00:00:00.000Z" })],
    ["is not JSON", "hello"],
    ["says nothing", ""],
  ])("holds the lock, naming no one, when the listener's answer %s", async (_case, answer) => {
    const path = join(await tempDir(), "poll.pid");
    const socket = lockSocketFor(path);
    const squatter = createServer((connection) => connection.end(answer));
    await new Promise<void>((resolve) => squatter.listen(socket.address, resolve));
    try {
      expect(await readLock(path)).toEqual({ holder: undefined, socket });
      const error: unknown = await acquirePidfile(path, "poller").catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PidfileHeldError);
      expect((error as PidfileHeldError).holder).toBeUndefined();
      expect((error as PidfileHeldError).message).toContain(`it listens on ${socket.shown}; find it with \`ss -xlp | grep ${socket.name}\``);
      expect(await exists(path)).toBe(false);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    const lock = await acquirePidfile(path, "poller");
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
    expect(await readLock(path)).toBeUndefined();
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
    expect((await heldBy(path))?.pid).toBe(pid);
    await expect(acquirePidfile(path, "poller")).rejects.toBeInstanceOf(PidfileHeldError);
    // Without a start time the pid alone decides.
    await claim(undefined);
    await expect(acquirePidfile(path, "poller")).rejects.toBeInstanceOf(PidfileHeldError);

    await claim((ticks ?? 0) + 1);
    expect(isProcessAlive(pid)).toBe(true);
    expect(isProcessAlive(pid, (ticks ?? 0) + 1)).toBe(false);
    expect(await readLock(path)).toBeUndefined();
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
    expect(outcomes.filter((outcome) => !outcome.acquired).map((outcome) => outcome.holder)).toEqual(Array.from({ length: CONTENDERS - 1 }, () => winner));
    expect((await holderIn(path)).pid).toBe(winner);

    for (const contender of contenders) contender.child.stdin.end();
    await Promise.all(contenders.map((contender) => expectCleanExit(contender)));
    expect(await exists(path)).toBe(false);
  });
});

describe("readLock", () => {
  it("is undefined for a missing file", async () => {
    expect(await readLock(join(await tempDir(), "none.pid"))).toBeUndefined();
  });
});

describe("lockSocketFor", () => {
  it("names one socket for every spelling of a pidfile's path, and another for another pidfile", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "state"));
    await symlink(join(dir, "state"), join(dir, "link"));
    const name = lockSocketFor(join(dir, "state", "poll.pid")).name;
    expect(lockSocketFor(join(dir, "link", "poll.pid")).name).toBe(name);
    expect(lockSocketFor(join(dir, "state", "..", "state", "poll.pid")).name).toBe(name);
    expect(lockSocketFor(join(dir, "state", "gh-webhook.pid")).name).not.toBe(name);
    expect(name).toMatch(/^the-loop-[0-9a-f]{32}$/);
  });

  it.each<[NodeJS.Platform, (name: string) => object]>([
    ["linux", (name) => ({ address: `\0${name}`, shown: `@${name}`, kind: "abstract" })],
    ["win32", (name) => ({ address: `\\\\.\\pipe\\${name}`, kind: "pipe" })],
    ["darwin", (name) => ({ address: join(tmpdir(), `${name}.sock`), kind: "file" })],
    ["freebsd", (name) => ({ address: join(tmpdir(), `${name}.sock`), kind: "file" })],
  ])("on %s, names a socket the system frees with its holder", (platform, expected) => {
    const socket = lockSocketFor("/srv/project/.the-loop/poll.pid", platform);
    expect(socket).toMatchObject({ ...expected(socket.name), name: socket.name });
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
