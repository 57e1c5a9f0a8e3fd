import { chmodSync, chownSync, lstatSync, mkdirSync, statSync, symlinkSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { Server } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { callDaemon } from "../../src/daemon/socket/rpc.js";
import { MAX_SOCKET_PATH, daemonSocketPath } from "../../src/daemon/socket/path.js";
import { folderProblem } from "../../src/state/private.js";
import { tempDir } from "../support/temp.js";

/** uid 65534 (nobody): another local user. */
const NOBODY = 65534;
const asRoot = process.geteuid?.() === 0;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A state root whose `daemon.sock` cannot fit a socket address. */
async function longRoot(): Promise<string> {
  return join(await tempDir(), "x".repeat(120), ".the-loop");
}

/** A private folder standing for $XDG_RUNTIME_DIR. */
async function runtimeDir(): Promise<string> {
  const dir = join(await tempDir(), "run");
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

describe("folderProblem", () => {
  const facts = { isDirectory: true, isSymbolicLink: false, uid: 1000, mode: 0o700 };
  it.each([
    ["a private folder of its user", facts, 1000, 0, undefined],
    ["another user's", facts, 1001, 0, "is owned by uid 1000, not by this user (uid 1001)"],
    ["one others may read", { ...facts, mode: 0o750 }, 1000, 0, "has mode 0750: others may use it"],
    ["one others may write, read allowed", { ...facts, mode: 0o777 }, 1000, 0o055, "has mode 0777: others may use it"],
    ["an older root others may read, read allowed", { ...facts, mode: 0o755 }, 1000, 0o055, undefined],
    ["a link", { ...facts, isSymbolicLink: true }, 1000, 0, "is a symbolic link, not a folder"],
    ["a file", { ...facts, isDirectory: false }, 1000, 0, "is not a folder"],
  ])("%s", (_what, given, uid, allowed, expected) => {
    expect(folderProblem(given, uid, allowed)).toBe(expected);
  });
});

describe("daemonSocketPath", () => {
  it("keeps the socket in a short state root", async () => {
    const root = join(await tempDir(), ".the-loop");
    expect(daemonSocketPath(root, { runtimeDir: undefined })).toBe(join(root, "daemon.sock"));
  });

  it("puts a long state root's socket in a private folder of XDG_RUNTIME_DIR, never the temporary folder", async () => {
    const root = await longRoot();
    const run = await runtimeDir();
    const path = daemonSocketPath(root, { runtimeDir: run });
    expect(path.startsWith(join(run, "the-loop") + "/")).toBe(true);
    expect(path.startsWith(join(tmpdir(), `the-loop-${userInfo().uid}`))).toBe(false);
    expect(Buffer.byteLength(path)).toBeLessThanOrEqual(MAX_SOCKET_PATH);
    const folder = lstatSync(join(run, "the-loop"));
    expect(folder.isDirectory()).toBe(true);
    expect(folder.mode & 0o777).toBe(0o700);
    // The client computes the same path.
    expect(daemonSocketPath(root, { runtimeDir: run })).toBe(path);
  });

  it("refuses a long state root without XDG_RUNTIME_DIR, with the fix", async () => {
    expect(() => daemonSocketPath(`/${"x".repeat(120)}`, { runtimeDir: undefined })).toThrow(
      /too long for the daemon's socket, and XDG_RUNTIME_DIR is unset: set state\.root to a shorter path \(the socket there would be \d+ bytes long; at most 100 fit\), or set XDG_RUNTIME_DIR to a folder only you can use \(mode 0700\)/,
    );
  });

  it("refuses a socket folder with the wrong mode, and a link in its place", async () => {
    const root = await longRoot();
    const run = await runtimeDir();
    mkdirSync(join(run, "the-loop"), { mode: 0o755 });
    chmodSync(join(run, "the-loop"), 0o755);
    expect(() => daemonSocketPath(root, { runtimeDir: run })).toThrow(
      `the daemon's socket folder ${join(run, "the-loop")} has mode 0755: others may use it; remove it`,
    );
    await rm(join(run, "the-loop"), { recursive: true });
    symlinkSync(await runtimeDir(), join(run, "the-loop"));
    expect(() => daemonSocketPath(root, { runtimeDir: run })).toThrow("is a symbolic link, not a folder");
  });

  it("refuses an XDG_RUNTIME_DIR others may use", async () => {
    const run = await runtimeDir();
    chmodSync(run, 0o777);
    const root = await longRoot();
    expect(() => daemonSocketPath(root, { runtimeDir: run })).toThrow(`XDG_RUNTIME_DIR ${run} has mode 0777: others may use it`);
  });

  it.skipIf(!asRoot)("refuses a socket folder another user made first", async () => {
    const run = await runtimeDir();
    mkdirSync(join(run, "the-loop"), { mode: 0o700 });
    chownSync(join(run, "the-loop"), NOBODY, NOBODY);
    const root = await longRoot();
    expect(() => daemonSocketPath(root, { runtimeDir: run })).toThrow(
      `the daemon's socket folder ${join(run, "the-loop")} is owned by uid ${NOBODY}, not by this user (uid 0); remove it (it is not the-loop's), or set state.root to a shorter path`,
    );
  });

  it.skipIf(!asRoot)("refuses a state root another user owns, or anyone may write", async () => {
    const root = join(await tempDir(), ".the-loop");
    mkdirSync(root, { mode: 0o700 });
    chownSync(root, NOBODY, NOBODY);
    expect(() => daemonSocketPath(root, { runtimeDir: undefined })).toThrow(`the state root ${root} is owned by uid ${NOBODY}`);
    chownSync(root, 0, 0);
    chmodSync(root, 0o777);
    expect(() => daemonSocketPath(root, { runtimeDir: undefined })).toThrow(`the state root ${root} has mode 0777`);
  });
});

describe("a client of a long state root", () => {
  it.skipIf(!asRoot)("never takes the answer of a socket another user planted in the temporary folder", async () => {
    vi.stubEnv("XDG_RUNTIME_DIR", "");
    const root = await longRoot();
    // Where a long root's socket used to go: another user makes the folder first and listens there.
    const hash = createHash("sha256").update(root).digest("hex").slice(0, 24);
    const planted = join(tmpdir(), `the-loop-${userInfo().uid}`);
    await rm(planted, { recursive: true, force: true });
    mkdirSync(planted, { mode: 0o777 });
    chmodSync(planted, 0o777);
    cleanups.push(() => rm(planted, { recursive: true, force: true }));
    const evil: Server = createServer((socket) => socket.end(`${JSON.stringify({ ok: true, result: "the other user's answer" })}\n`));
    await new Promise<void>((resolve) => evil.listen(join(planted, `${hash}.sock`), resolve));
    cleanups.push(() => new Promise<void>((resolve) => evil.close(() => resolve())));
    chownSync(planted, NOBODY, NOBODY);
    expect(statSync(join(planted, `${hash}.sock`)).isSocket()).toBe(true);

    await expect(Promise.resolve().then(() => callDaemon(root, "graph.complete", {}, 2_000))).rejects.toThrow(
      "the state root's path is too long for the daemon's socket, and XDG_RUNTIME_DIR is unset",
    );
  });

  it("connects through a private XDG_RUNTIME_DIR folder", async () => {
    const run = await runtimeDir();
    vi.stubEnv("XDG_RUNTIME_DIR", run);
    const root = await longRoot();
    const { serveRpc } = await import("../../src/daemon/socket/rpc.js");
    const server = await serveRpc(root, { ping: async () => "pong" });
    cleanups.push(() => server.close());
    expect(server.path.startsWith(join(run, "the-loop"))).toBe(true);
    await expect(callDaemon(root, "ping", {}, 5_000)).resolves.toBe("pong");
  });
});
