import { randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ProgramNotFoundError, RunnerError, SessionMissingError, TargetLiveError, TmuxRunner, type SpawnRequest } from "../../src/harness/index.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

const FAKE_HARNESS = fileURLToPath(new URL("../support/fake-harness.mjs", import.meta.url));
const PASTE_GUARD_HARNESS = fileURLToPath(new URL("../support/paste-guard-harness.mjs", import.meta.url));
const SOCKET = `loop-test-${process.pid}-${randomBytes(4).toString("hex")}`;

type Entry =
  | { type: "boot"; argv: string[]; cwd: string; env: { THE_LOOP_WORK_ITEM: string | null } }
  | { type: "input"; text: string }
  | { type: "ready" | "newline" }
  | { type: "submitted"; text: string };

let runners: TmuxRunner[] = [];
function runner(remainOnExit = true): TmuxRunner {
  const created = new TmuxRunner({ socketName: SOCKET, remainOnExit, timeoutMs: 5_000 });
  runners.push(created);
  return created;
}

afterEach(async () => {
  // Every runner shares the one socket, so killing the server once clears them all.
  await runners[0]?.killServer();
  runners = [];
});

async function entries(transcript: string): Promise<Entry[]> {
  const text = await readFile(transcript, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Entry);
}

async function waitForEntries(transcript: string, count: number): Promise<Entry[]> {
  return waitFor(`${count} transcript entries in ${transcript}`, async () => {
    const found = await entries(transcript);
    return found.length >= count ? found : undefined;
  });
}

interface Fake {
  readonly dir: string;
  readonly transcript: string;
  readonly request: SpawnRequest;
}

async function fake(target: string, options: { args?: string[]; env?: Record<string, string> } = {}): Promise<Fake> {
  const dir = await tempDir();
  const transcript = join(dir, "transcript.jsonl");
  return {
    dir,
    transcript,
    request: {
      target,
      cwd: dir,
      argv: [process.execPath, FAKE_HARNESS, transcript, ...(options.args ?? [])],
      env: { THE_LOOP_WORK_ITEM: "local:demo#1", ...options.env },
    },
  };
}

/** The fake prints "ready" after asking for bracketed paste; once tmux shows it, pastes arrive bracketed. */
async function waitReady(tmux: TmuxRunner, target: string): Promise<void> {
  await waitFor(`${target} ready`, async () => ((await tmux.capture(target)).includes("fake-harness: ready") ? true : undefined));
}

async function waitState(tmux: TmuxRunner, target: string, state: "live" | "dead" | "absent"): Promise<void> {
  await waitFor(`${target} ${state}`, async () => ((await tmux.probe(target)) === state ? true : undefined));
}

const NASTY = [
  `first line with 'single' and "double" quotes`,
  "  $(rm -rf ~) and `whoami` ; echo pwned && false || true",
  "\ttabs, $HOME, \\backslash\\, #{session_name}, {prompt}, ünïcödé ✅",
  "",
  "last line after a blank one",
].join("\n");

describe("TmuxRunner", () => {
  it("spawns the harness with its argv, cwd and environment, never through a shell", async () => {
    const tmux = runner();
    const prompt = "do it; $(touch pwned) `touch pwned2` 'q' \"dq\"\nsecond line";
    const { dir, transcript, request } = await fake("loop-spawn", { args: ["--session-id", "s-1", prompt, "*"] });
    await tmux.spawn(request);
    const [boot] = await waitForEntries(transcript, 1);
    expect(boot).toEqual({
      type: "boot",
      argv: ["--session-id", "s-1", prompt, "*"],
      cwd: dir,
      env: { THE_LOOP_WORK_ITEM: "local:demo#1" },
    });
    expect(await tmux.probe("loop-spawn")).toBe("live");
  });

  it("runs a one-element argv directly, not as a shell command, with the request's environment and PATH", async () => {
    const tmux = runner();
    const dir = await tempDir();
    // A program path a shell would mangle: spaces, $(), a semicolon.
    const program = join(dir, "my agent $(touch pwned); x.sh");
    await writeFile(program, '#!/bin/sh\nprintf "%s|%s|%s" "$#" "$ODD" "$PATH" > "$OUT"\nexec tail -f /dev/null\n');
    await chmod(program, 0o755);
    const odd = "a b; $(touch pwned2) `x` 'q' \"dq\" = \\";
    const path = `${join(dir, "bin")}:${process.env.PATH ?? ""}`;
    await tmux.spawn({ target: "loop-single", cwd: dir, argv: [program], env: { OUT: join(dir, "out"), ODD: odd, PATH: path } });
    // The shell creates the file before printf writes to it: an empty file is not the output yet.
    const out = await waitFor("the program's output", () =>
      readFile(join(dir, "out"), "utf8").then(
        (text) => text || undefined,
        () => undefined,
      ),
    );
    expect(out).toBe(`0|${odd}|${path}`);
    expect(await readdir(dir)).not.toContain("pwned");
  });

  it("delivers text byte for byte as one bracketed paste, then submits it", async () => {
    const tmux = runner();
    const { transcript, request } = await fake("loop-deliver");
    await tmux.spawn(request);
    await waitReady(tmux, "loop-deliver");
    await tmux.pasteText("loop-deliver", NASTY);
    const found = await waitForEntries(transcript, 2);
    expect(found.slice(1)).toEqual([{ type: "input", text: NASTY }]);
  });

  it("with bracketItself, brackets the paste for a harness that has not asked for bracketed paste", async () => {
    const tmux = runner();
    const { transcript, request } = await fake("loop-self-bracket", { env: { FAKE_HARNESS_NO_BRACKETED_PASTE: "1" } });
    await tmux.spawn(request);
    await waitReady(tmux, "loop-self-bracket");
    await tmux.pasteText("loop-self-bracket", NASTY, { bracketItself: true });
    const found = await waitForEntries(transcript, 2);
    expect(found.slice(1)).toEqual([{ type: "input", text: NASTY }]);
  });

  it("with submitUntilTaken, presses Enter again while the box still shows the paste", async () => {
    const tmux = runner();
    const dir = await tempDir();
    const transcript = join(dir, "transcript.jsonl");
    const argv = [process.execPath, PASTE_GUARD_HARNESS, transcript, "700"];
    const pastedPattern = /─{8,}\n> \S/;
    await tmux.spawn({ target: "loop-guard", cwd: dir, argv, env: {} });
    await waitForEntries(transcript, 1);
    // Without it, the Enter sent as soon as the box shows the paste lands inside the guard.
    await tmux.pasteText("loop-guard", "first", { pastedPattern });
    expect((await waitForEntries(transcript, 2))[1]).toEqual({ type: "newline" });
    await tmux.pasteText("loop-guard", " second", { pastedPattern, submitUntilTaken: true });
    const submitted = await waitFor("the submit", async () => (await entries(transcript)).find((entry) => entry.type === "submitted"));
    // Each Enter inside the guard added a newline; one after it submitted the lot.
    expect(submitted).toMatchObject({ text: expect.stringMatching(/^first\n+ second\n+$/) as string });
    expect(await tmux.screen("loop-guard")).toContain("Type your message");
  });

  it("views the pane with its size and colours, and says when the session is gone", async () => {
    const tmux = runner();
    const dir = await tempDir();
    const script = "printf '\\033[31mred\\033[0m plain\\n'; exec tail -f /dev/null";
    await tmux.spawn({ target: "loop-view", cwd: dir, argv: ["sh", "-c", script], env: {} });
    const view = await waitFor("the colours", async () => {
      const seen = await tmux.view("loop-view");
      return seen.text.includes("plain") ? seen : undefined;
    });
    // The size the-loop starts every session at.
    expect(view).toMatchObject({ cols: 220, rows: 50 });
    const ESC = "\u001b";
    expect([`${ESC}[31mred${ESC}[39m plain`, `${ESC}[31mred${ESC}[0m plain`]).toContain(view.text.split("\n")[0]);
    await tmux.terminate("loop-view", { killHarness: true, graceMs: 1_000, killSession: true });
    await expect(tmux.view("loop-view")).rejects.toBeInstanceOf(SessionMissingError);
  });

  it("delivers in order, also when calls overlap", async () => {
    const tmux = runner();
    const { transcript, request } = await fake("loop-order");
    await tmux.spawn(request);
    await waitReady(tmux, "loop-order");
    await tmux.pasteText("loop-order", "one");
    await tmux.pasteText("loop-order", "two\nlines");
    await Promise.all([tmux.pasteText("loop-order", "three"), tmux.pasteText("loop-order", "four"), tmux.pasteText("loop-order", "five")]);
    const found = await waitForEntries(transcript, 6);
    expect(found.slice(1).map((entry) => (entry.type === "input" ? entry.text : entry.type))).toEqual(["one", "two\nlines", "three", "four", "five"]);
  });

  it("keeps deliveries to different sessions apart", async () => {
    const tmux = runner();
    const a = await fake("loop-par-a");
    const b = await fake("loop-par-b");
    await Promise.all([tmux.spawn(a.request), tmux.spawn(b.request)]);
    await Promise.all([waitReady(tmux, "loop-par-a"), waitReady(tmux, "loop-par-b")]);
    await Promise.all([tmux.pasteText("loop-par-a", "for a\nonly"), tmux.pasteText("loop-par-b", "for b\nonly")]);
    expect((await waitForEntries(a.transcript, 2)).slice(1)).toEqual([{ type: "input", text: "for a\nonly" }]);
    expect((await waitForEntries(b.transcript, 2)).slice(1)).toEqual([{ type: "input", text: "for b\nonly" }]);
  });

  it("refuses to spawn over a live session", async () => {
    const tmux = runner();
    const { transcript, request } = await fake("loop-live");
    await tmux.spawn(request);
    await waitForEntries(transcript, 1);
    await expect(tmux.spawn(request)).rejects.toBeInstanceOf(TargetLiveError);
    await expect(tmux.spawn(request)).rejects.toThrow(/loop-live is already running/);
    expect(await entries(transcript)).toHaveLength(1);
  });

  it("lets exactly one of two racing spawns win", async () => {
    const tmux = runner();
    const { transcript, request } = await fake("loop-race");
    const results = await Promise.allSettled([tmux.spawn(request), tmux.spawn(request)]);
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    const [failed] = results.filter((result) => result.status === "rejected");
    expect(failed?.reason).toBeInstanceOf(TargetLiveError);
    await waitForEntries(transcript, 1);
    await waitReady(tmux, "loop-race");
    expect(await entries(transcript)).toHaveLength(1);
  });

  it("probes absent, live and dead; a dead pane keeps its transcript and can be spawned over", async () => {
    const tmux = runner();
    expect(await tmux.probe("loop-states")).toBe("absent");
    const { transcript, request } = await fake("loop-states", { env: { FAKE_HARNESS_EXIT_AFTER_BOOT: "1" } });
    await tmux.spawn(request);
    await waitState(tmux, "loop-states", "dead");
    await expect(tmux.pasteText("loop-states", "hello")).rejects.toMatchObject({ name: "SessionMissingError", state: "dead" });
    // The point of remain-on-exit: the harness's last words stay readable. (Not tmux's "Pane is
    // dead" notice: tmux before 3.5 can lose the exit status and then never draws it.)
    await waitFor("the dead pane's text", async () => ((await tmux.capture("loop-states")).includes("fake-harness: exiting after boot") ? true : undefined));

    await tmux.spawn({ ...request, env: { THE_LOOP_WORK_ITEM: "local:demo#2" } });
    await waitReady(tmux, "loop-states");
    expect(await tmux.probe("loop-states")).toBe("live");
    const found = await waitForEntries(transcript, 2);
    expect(found.map((entry) => (entry.type === "boot" ? entry.env.THE_LOOP_WORK_ITEM : entry.type))).toEqual(["local:demo#1", "local:demo#2"]);
  });

  it("lets the session go with its harness when remain-on-exit is off", async () => {
    const tmux = runner(false);
    const { transcript, request } = await fake("loop-gone", { env: { FAKE_HARNESS_EXIT_AFTER_BOOT: "1" } });
    await tmux.spawn(request);
    await waitForEntries(transcript, 1);
    await waitState(tmux, "loop-gone", "absent");
  });

  it("reports a missing session on delivery", async () => {
    const tmux = runner();
    const error = await tmux.pasteText("loop-nobody", "hello").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SessionMissingError);
    expect(error).toMatchObject({ target: "loop-nobody", state: "absent" });
    await expect(tmux.capture("loop-nobody")).rejects.toBeInstanceOf(SessionMissingError);
    await expect(tmux.pasteText("loop-nobody", "")).rejects.toThrow(/the text is empty/);
  });

  it("terminates with SIGTERM and keeps the session for its transcript", async () => {
    const tmux = runner(false);
    const { request } = await fake("loop-term");
    await tmux.spawn(request);
    await waitReady(tmux, "loop-term");
    await expect(tmux.terminate("loop-term", { killHarness: true, graceMs: 10_000, killSession: false })).resolves.toEqual({
      signal: "SIGTERM",
      keptSession: true,
    });
    expect(await tmux.probe("loop-term")).toBe("dead");
    expect(await tmux.capture("loop-term")).toContain("fake-harness: ready");
    // Nothing left to stop.
    await expect(tmux.terminate("loop-term", { killHarness: true, graceMs: 100, killSession: false })).resolves.toEqual({
      signal: "none",
      keptSession: true,
    });
  });

  it("escalates to SIGKILL after the grace period and kills the session when asked", async () => {
    const tmux = runner();
    const { request } = await fake("loop-stubborn", { env: { FAKE_HARNESS_IGNORE_TERM: "1" } });
    await tmux.spawn(request);
    await waitReady(tmux, "loop-stubborn");
    await expect(tmux.terminate("loop-stubborn", { killHarness: true, graceMs: 300, killSession: true })).resolves.toEqual({
      signal: "SIGKILL",
      keptSession: false,
    });
    expect(await tmux.probe("loop-stubborn")).toBe("absent");
  });

  it("can leave the harness running or close an absent session as a no-op", async () => {
    const tmux = runner();
    const { request } = await fake("loop-keep");
    await tmux.spawn(request);
    await waitReady(tmux, "loop-keep");
    await expect(tmux.terminate("loop-keep", { killHarness: false, graceMs: 0, killSession: false })).resolves.toEqual({
      signal: "none",
      keptSession: true,
    });
    expect(await tmux.probe("loop-keep")).toBe("live");
    await expect(tmux.terminate("loop-nothing", { killHarness: true, graceMs: 0, killSession: true })).resolves.toEqual({
      signal: "none",
      keptSession: false,
    });
  });

  it("addresses sessions exactly: loop-abc is not loop-abcdef", async () => {
    const tmux = runner();
    const long = await fake("loop-abcdef");
    await tmux.spawn(long.request);
    await waitReady(tmux, "loop-abcdef");

    expect(await tmux.probe("loop-abc")).toBe("absent");
    await expect(tmux.pasteText("loop-abc", "misrouted")).rejects.toBeInstanceOf(SessionMissingError);
    await expect(tmux.terminate("loop-abc", { killHarness: true, graceMs: 0, killSession: true })).resolves.toEqual({
      signal: "none",
      keptSession: false,
    });
    expect(await tmux.probe("loop-abcdef")).toBe("live");

    const short = await fake("loop-abc");
    await tmux.spawn(short.request);
    await waitReady(tmux, "loop-abc");
    await tmux.pasteText("loop-abc", "for the short one");
    expect((await waitForEntries(short.transcript, 2)).slice(1)).toEqual([{ type: "input", text: "for the short one" }]);
    expect(await entries(long.transcript)).toHaveLength(1);
  });

  it.each(["loop-", "abc", "loop-a:b", "loop-a.b", "=loop-a", "loop-a b", "loop-a;b", "-t", "LOOP-a", "loop-a\n"])(
    "rejects the invalid target %j",
    async (target) => {
      const tmux = runner();
      await expect(tmux.probe(target)).rejects.toBeInstanceOf(RunnerError);
      await expect(tmux.spawn({ target, cwd: "/", argv: ["true", "x"], env: {} })).rejects.toBeInstanceOf(RunnerError);
      await expect(tmux.pasteText(target, "x")).rejects.toBeInstanceOf(RunnerError);
      await expect(tmux.terminate(target, { killHarness: true, graceMs: 0, killSession: true })).rejects.toBeInstanceOf(RunnerError);
      await expect(tmux.capture(target)).rejects.toBeInstanceOf(RunnerError);
      expect(() => tmux.attachArgv(target, true)).toThrow(RunnerError);
    },
  );

  it("rejects an empty argv, invalid environment names, a missing cwd and a missing program before touching tmux", async () => {
    const tmux = runner();
    const dir = await tempDir();
    await expect(tmux.spawn({ target: "loop-bad", cwd: dir, argv: [], env: {} })).rejects.toThrow(/argv is empty/);
    await expect(tmux.spawn({ target: "loop-bad", cwd: dir, argv: ["true", "x"], env: { "A=B": "c" } })).rejects.toThrow(/environment variable name/);
    await expect(tmux.spawn({ target: "loop-bad", cwd: join(dir, "missing"), argv: ["true", "x"], env: {} })).rejects.toThrow(
      /working directory .*missing does not exist/,
    );
    // A harness that is not installed would leave only a dead pane: refused up front instead.
    await expect(tmux.spawn({ target: "loop-bad", cwd: dir, argv: ["no-such-agent-cli", "x"], env: {} })).rejects.toThrow(ProgramNotFoundError);
    await expect(tmux.spawn({ target: "loop-bad", cwd: dir, argv: ["true", "x"], env: { PATH: join(dir, "empty-bin") } })).rejects.toThrow(
      '"true" is not an executable on the session\'s PATH',
    );
    expect(await tmux.probe("loop-bad")).toBe("absent");
  });

  it("turns tmux failures and timeouts into RunnerError with tmux's own words", async () => {
    const dir = await tempDir();
    const failing = join(dir, "failing-tmux");
    await writeFile(failing, '#!/bin/sh\necho "boom: $*" >&2\nexit 1\n');
    const hanging = join(dir, "hanging-tmux");
    await writeFile(hanging, "#!/bin/sh\nexec tail -f /dev/null\n");
    await Promise.all([chmod(failing, 0o755), chmod(hanging, 0o755)]);

    const broken = new TmuxRunner({ socketName: SOCKET, remainOnExit: true, binary: failing });
    const error = await broken.probe("loop-err").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunnerError);
    expect((error as Error).message).toBe(`tmux list-panes failed: boom: -L ${SOCKET} list-panes -s -t =loop-err: -F #{pane_dead}`);

    const stuck = new TmuxRunner({ socketName: SOCKET, remainOnExit: true, binary: hanging, timeoutMs: 200 });
    await expect(stuck.probe("loop-err")).rejects.toThrow(/tmux list-panes failed: timed out after 200 ms/);

    const missing = new TmuxRunner({ remainOnExit: true, binary: join(dir, "no-such-tmux") });
    await expect(missing.probe("loop-err")).rejects.toBeInstanceOf(RunnerError);
  });

  it("pastes through private temp files that tmux must not read as formats, and removes them", async () => {
    const pasteDir = join(await tempDir(), "paste #{session_name} ; dir");
    await mkdir(pasteDir);
    const tmux = new TmuxRunner({ socketName: SOCKET, remainOnExit: true, tempDir: pasteDir });
    runners.push(tmux);
    const { transcript, request } = await fake("loop-files");
    await tmux.spawn(request);
    await waitReady(tmux, "loop-files");
    await tmux.pasteText("loop-files", "via an odd temp dir");
    expect((await waitForEntries(transcript, 2)).slice(1)).toEqual([{ type: "input", text: "via an odd temp dir" }]);
    expect(await readdir(pasteDir)).toEqual([]);
  });

  it("builds the attach argv and refuses to kill the default server", async () => {
    expect(runner().attachArgv("loop-x", true)).toEqual(["tmux", "-L", SOCKET, "attach-session", "-r", "-t", "=loop-x"]);
    expect(new TmuxRunner({ remainOnExit: true, binary: "/usr/bin/tmux" }).attachArgv("loop-x", false)).toEqual([
      "/usr/bin/tmux",
      "attach-session",
      "-t",
      "=loop-x",
    ]);
    await expect(new TmuxRunner({ remainOnExit: true }).killServer()).rejects.toBeInstanceOf(RunnerError);
  });
});

describe("TmuxRunner withheld environment", () => {
  const name = "THE_LOOP_TEST_WITHHELD_SECRET";
  afterEach(() => {
    delete process.env[name];
  });

  /** The tmux server is started by this process, so it inherits the variable: the harness must still not see it. */
  async function seenByHarness(withheldEnv: string[]): Promise<string> {
    process.env[name] = "s3cr3t-value";
    const socketName = `loop-test-withheld-${process.pid}-${randomBytes(4).toString("hex")}`;
    const tmux = new TmuxRunner({ socketName, remainOnExit: true, timeoutMs: 5_000, withheldEnv });
    const dir = await tempDir();
    const out = join(dir, "seen.json");
    const script = `require("fs").writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.env.${name} ?? null)); setInterval(() => {}, 1000);`;
    try {
      await tmux.spawn({ target: "loop-withheld", cwd: dir, argv: [process.execPath, "-e", script], env: {} });
      // writeFileSync creates the file before it writes: an empty file is no report yet.
      return await waitFor("the harness to report its environment", async () =>
        readFile(out, "utf8").then(
          (text) => text || undefined,
          () => undefined,
        ),
      );
    } finally {
      await tmux.killServer();
    }
  }

  it("keeps a withheld variable from the harness even when the tmux server holds it", async () => {
    expect(await seenByHarness([])).toBe('"s3cr3t-value"');
    expect(await seenByHarness([name])).toBe("null");
  });
});
