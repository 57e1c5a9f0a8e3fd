import { chmod, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookDeclarationError, HookLoadError, loadHooks, parseHookDeclaration } from "../../src/hooks/index.js";
import type { SubprocessHookEntry } from "../../src/hooks/index.js";
import { LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { hookEvents, spawnContext, startContext } from "./support/fixtures.js";
import { generationPre } from "./support/loop-fixtures.js";
import { writeIn } from "./support/hook-dir.js";

/**
 * `command` entries, against real processes: node scripts written into a temp folder that stands
 * for the config file's, run through the bounded command runner as the daemon runs them.
 */

const NODE = process.execPath;
/** The PATH the commands get in these tests: node's folder and the system's, nothing of the test runner's. */
const TEST_PATH = [dirname(NODE), "/usr/bin", "/bin"].join(":");

afterEach(() => {
  vi.unstubAllEnvs();
});

const READ_STDIN = `
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
`;

/** Refuses a start, saying what it was given; records its stdin and cwd next to itself. Echoes its payload, as an agh hook may. */
const REFUSER = `${READ_STDIN}
const { writeFileSync } = await import("node:fs");
writeFileSync(new URL("./seen.json", import.meta.url), JSON.stringify({ request, cwd: process.cwd() }));
process.stdout.write(JSON.stringify({ ...request, proceed: false, reason: request.the_loop.with.reason + " at " + request.event }));
`;

function parse(raw: unknown, configDir = "/etc/the-loop", homeDir = "/home/ann"): SubprocessHookEntry {
  const [entry] = parseHookDeclaration([raw], { configDir, points: LIFECYCLE_POINT_NAMES, homeDir });
  expect(entry?.kind).toBe("command");
  return entry as SubprocessHookEntry;
}

function declarationError(raw: unknown): string {
  try {
    parseHookDeclaration([raw], { configDir: "/etc/the-loop", points: LIFECYCLE_POINT_NAMES });
  } catch (error) {
    expect(error).toBeInstanceOf(HookDeclarationError);
    return (error as Error).message;
  }
  throw new Error("the declaration loaded");
}

async function loadFailure(promise: Promise<unknown>): Promise<string> {
  const error: unknown = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(HookLoadError);
  return (error as Error).message;
}

/** A config folder holding `files`, and the chain a declaration of `hooks` there loads. */
/** `env` null: the commands' environment is read from process.env, as the daemon's is. */
async function loaded(hooks: readonly unknown[], files: Record<string, string>, env: NodeJS.ProcessEnv | null = { PATH: TEST_PATH }) {
  const configDir = await tempDir("the-loop-command-hooks-");
  for (const [path, text] of Object.entries(files)) await writeIn(configDir, path, text);
  const events = new MemoryEventSink();
  const chain = await loadHooks({ raw: hooks, configDir, events, ...(env === null ? {} : { env }) });
  return { configDir, events, chain };
}

/** The `hooks.failed` errors recorded. */
function failures(events: MemoryEventSink): unknown[] {
  return hookEvents(events)
    .filter(([type]) => type === "hooks.failed")
    .map(([, fields]) => fields["error"]);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("command entries in the declaration", () => {
  it.each([
    ["a path with a / resolves against the config's folder", ["./hooks/gate.mjs", "--strict"], ["/etc/the-loop/hooks/gate.mjs", "--strict"]],
    ["a folder-relative path without ./", ["hooks/gate"], ["/etc/the-loop/hooks/gate"]],
    ["an absolute path stays", ["/usr/local/bin/gate", "./arg"], ["/usr/local/bin/gate", "./arg"]],
    ["~/ is the home folder", ["~/bin/gate"], ["/home/ann/bin/gate"]],
    ["a bare name is left for PATH, and no argument is resolved", ["jq", "./x"], ["jq", "./x"]],
  ])("%s", (_case, command, argv) => {
    const entry = parse({ name: "gate", command });
    // 5 s: agh's default for a subprocess hook (a url entry keeps 10).
    expect(entry).toMatchObject({
      kind: "command",
      target: command[0],
      argv,
      env: [],
      envValues: {},
      timeoutSeconds: 5,
      options: {},
      required: false,
      enabled: true,
    });
  });

  it("keeps env (once each), timeoutSeconds, with, on and required", () => {
    const entry = parse({
      name: "gate",
      command: ["gate"],
      env: ["GATE_URL", "GATE_URL", "LANGUAGE"],
      timeoutSeconds: 2.5,
      with: { strict: true },
      on: ["work_item_start"],
      required: true,
    });
    expect(entry).toMatchObject({ env: ["GATE_URL", "LANGUAGE"], timeoutSeconds: 2.5, options: { strict: true }, on: ["work_item_start"], required: true });
  });

  it("takes agh's env map: values as written, their names listed", () => {
    const entry = parse({ name: "gate", command: ["gate"], env: { POLICY: "secret-files", LOG_LEVEL: "$GH_TOKEN" } });
    expect(entry).toMatchObject({ env: ["POLICY", "LOG_LEVEL"], envValues: { POLICY: "secret-files", LOG_LEVEL: "$GH_TOKEN" } });
  });

  it.each([
    ["a token", "GH_TOKEN"],
    ["a secret", "WEBHOOK_SECRET"],
    ["a password", "DB_PASSWORD"],
    ["an API key", "OPENAI_API_KEY"],
  ])("refuses %s's name in the env map, pointing to the list form", (_case, name) => {
    const message = declarationError({ name: "gate", command: ["gate"], env: { [name]: "written-in-the-file" } });
    expect(message).toContain(`env sets ${name}, which looks like a secret`);
    expect(message).toContain(`env: [${name}]`);
    expect(message).not.toContain("written-in-the-file");
  });

  it("refuses THE_LOOP_RUN_ID in either form", () => {
    expect(declarationError({ name: "gate", command: ["gate"], env: { THE_LOOP_RUN_ID: "x" } })).toContain("which the-loop sets on every command it runs");
    expect(declarationError({ name: "gate", command: ["gate"], env: ["THE_LOOP_RUN_ID"] })).toContain("which the-loop sets on every command it runs");
  });

  it.each([
    ["an empty command", { command: [] }, "command"],
    ["an empty word", { command: ["gate", ""] }, "command.1"],
    ["a NUL byte", { command: ["gate", "a\0b"] }, "command[1] holds a NUL byte"],
    ["path and command", { path: "h.mjs", command: ["gate"] }, "give exactly one of module, path, url or command (it has path and command)"],
    ["url and command", { url: "https://h.example/rpc", command: ["gate"] }, "(it has url and command)"],
    ["executor on a command", { command: ["gate"], executor: "Gate" }, "executor applies to module and path entries only, not to a command"],
    ["tokenEnv on a command", { command: ["gate"], tokenEnv: "T" }, "tokenEnv applies to url entries only, not to a command"],
    ["headers on a command", { command: ["gate"], headers: { "x-a": "b" } }, "headers applies to url entries only, not to a command"],
    ["env on a path", { path: "h.mjs", env: ["A"] }, "env applies to command entries only, not to a path"],
    ["env on a url", { url: "https://h.example/rpc", env: ["A"] }, "env applies to command entries only, not to a url"],
    ["an env entry that is no variable name", { command: ["gate"], env: ["A=B"] }, "env.0: an environment variable name"],
    ["an unknown key", { command: ["gate"], args: ["x"] }, "(args)"],
  ])("refuses %s", (_case, keys, message) => {
    expect(declarationError({ name: "gate", ...keys })).toContain(message);
  });
});

describe("loading a command entry", () => {
  it.each([
    ["no file there", { name: "gate", command: ["./hooks/missing.mjs"] }, {}, "no file at "],
    ["a file that is not executable", { name: "gate", command: ["./gate.mjs"] }, { "gate.mjs": "" }, "is not executable; make it so (chmod +x)"],
    ["a bare name on no folder of PATH", { name: "gate", command: ["the-loop-no-such-gate"] }, {}, "command not found: the-loop-no-such-gate"],
  ])("fails the load on %s, naming the entry", async (_case, hook, files, message) => {
    const configDir = await tempDir("the-loop-command-hooks-");
    for (const [path, text] of Object.entries(files)) await writeIn(configDir, path, text);
    const error = await loadFailure(loadHooks({ raw: [hook], configDir, events: new MemoryEventSink(), env: { PATH: TEST_PATH } }));
    expect(error).toContain('hooks[0] "gate": ');
    expect(error).toContain(message);
  });

  it("runs at every lifecycle point without on, and only at its points with on", async () => {
    const { chain } = await loaded(
      [
        { name: "all", command: ["node", "-e", "0"] },
        { name: "some", command: ["node", "-e", "0"], on: ["session_spawned"] },
      ],
      {},
    );
    for (const point of LIFECYCLE_POINT_NAMES) expect(chain.handles(point)).toBe(true);
    expect(chain.names).toEqual(["all", "some"]);
    const only = await loaded([{ name: "some", command: ["node", "-e", "0"], on: ["session_spawned"] }], {});
    expect(LIFECYCLE_POINT_NAMES.filter((point) => only.chain.handles(point))).toEqual(["session_spawned"]);
  });
});

describe("running a command hook", () => {
  it("hands agh's flat payload on stdin (the context, event, timestamp, with under the_loop), runs in the config's folder, and applies the patch", async () => {
    const { configDir, events, chain } = await loaded([{ name: "freeze", command: [NODE, "refuse.mjs"], with: { reason: "frozen" } }], {
      "refuse.mjs": REFUSER,
    });
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "freeze", reason: "frozen at work_item_start" });
    expect(outcome.changed).toEqual(["proceed", "reason"]);
    const seen = JSON.parse(await readFile(join(configDir, "seen.json"), "utf8")) as { request: Record<string, unknown>; cwd: string };
    const { timestamp, ...rest } = seen.request;
    expect(rest).toEqual({ ...startContext(), event: "work_item_start", the_loop: { with: { reason: "frozen" } } });
    expect(String(timestamp)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(seen.cwd).toBe(configDir);
    // The echoed framing (event, timestamp, the_loop) is no answer: nothing recorded as ignored.
    expect(hookEvents(events).map(([type]) => type)).toEqual(["hooks.loaded", "hooks.decided"]);
  });

  it("runs an executable file named relative to the config's folder, found through its #! line", async () => {
    const configDir = await tempDir("the-loop-command-hooks-");
    await chmod(await writeIn(configDir, "hooks/refuse.mjs", `#!/usr/bin/env node\n${REFUSER}`), 0o755);
    const raw = [{ name: "freeze", command: ["./hooks/refuse.mjs"], with: { reason: "frozen" } }];
    const chain = await loadHooks({ raw, configDir, events: new MemoryEventSink(), env: { PATH: TEST_PATH } });
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "freeze", reason: "frozen at work_item_start" });
    expect(JSON.parse(await readFile(join(configDir, "hooks", "seen.json"), "utf8"))).toMatchObject({ cwd: configDir });
  });

  it("gives the command agh's env map as written, over the daemon's variable of that name, and nothing else", async () => {
    vi.stubEnv("GH_TOKEN", "ghp_fake0123456789abcdefghijklmnopqrstuv");
    vi.stubEnv("POLICY", "the daemon's");
    vi.stubEnv("PATH", TEST_PATH);
    const printEnv = `${READ_STDIN}\nprocess.stdout.write(JSON.stringify({ prompt: JSON.stringify(process.env) }));\n`;
    const { chain } = await loaded(
      [{ name: "env", command: [NODE, "env.mjs"], env: { POLICY: "secret-files", QUOTED: "$GH_TOKEN" } }],
      { "env.mjs": printEnv },
      null,
    );
    const env = JSON.parse((await chain.run("session_spawn", spawnContext())).context.prompt) as Record<string, string>;
    expect(env["POLICY"]).toBe("secret-files");
    // Never expanded: a map value cannot reach a variable of the daemon's.
    expect(env["QUOTED"]).toBe("$GH_TOKEN");
    expect(JSON.stringify(env)).not.toContain("ghp_fake");
  });

  it("gives the command the base variables and its env names, and no other variable of the daemon's", async () => {
    vi.stubEnv("GH_TOKEN", "ghp_fake0123456789abcdefghijklmnopqrstuv");
    vi.stubEnv("THE_LOOP_HOOK_TEST_SECRET", "s3cret");
    vi.stubEnv("HOOK_LABEL", "passed on");
    vi.stubEnv("PATH", TEST_PATH);
    const printEnv = `${READ_STDIN}\nprocess.stdout.write(JSON.stringify({ prompt: JSON.stringify(process.env) }));\n`;
    const { chain } = await loaded([{ name: "env", command: [NODE, "env.mjs"], env: ["HOOK_LABEL", "UNSET_HERE"] }], { "env.mjs": printEnv }, null);
    const outcome = await chain.run("session_spawn", spawnContext());
    const env = JSON.parse(outcome.context.prompt) as Record<string, string>;
    expect(env["HOOK_LABEL"]).toBe("passed on");
    expect(env["PATH"]).toBe(TEST_PATH);
    expect(env).not.toHaveProperty("GH_TOKEN");
    expect(env).not.toHaveProperty("THE_LOOP_HOOK_TEST_SECRET");
    expect(env).not.toHaveProperty("UNSET_HERE");
    // THE_LOOP_RUN_ID marks the run's processes (no secret): the-loop stops what the hook started by it.
    const allowed = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "HOOK_LABEL", "THE_LOOP_RUN_ID"];
    expect(Object.keys(env).filter((name) => !allowed.includes(name))).toEqual([]);
  });

  it("stops a command at its timeout, with what it started, as that hook's failure", async () => {
    const sleeper = `
const { spawn } = await import("node:child_process");
const { writeFileSync } = await import("node:fs");
const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
writeFileSync(new URL("./child.pid", import.meta.url), String(child.pid));
setInterval(() => {}, 1000);
`;
    const { configDir, events, chain } = await loaded([{ name: "slow", command: [NODE, "slow.mjs"], timeoutSeconds: 0.5, required: true }], {
      "slow.mjs": sleeper,
    });
    const outcome = await chain.run("work_item_start", startContext());
    expect(failures(events)).toEqual(["the command did not finish within 500 ms and was stopped"]);
    expect(outcome.refusal?.hook).toBe("slow");
    const pid = Number(await readFile(join(configDir, "child.pid"), "utf8"));
    await waitFor("the hook's child to be gone", () => (isAlive(pid) ? undefined : true), { timeoutMs: 5_000 });
  });

  it.each([
    ["prints garbage", 'process.stdout.write("ok, go ahead");', "not one JSON document"],
    ["prints an array", 'process.stdout.write("[1, 2]");', "the command printed an array, not a patch object or null"],
    ["prints two documents", 'process.stdout.write("{} {}");', "not one JSON document"],
    ["exits 3, saying why on stderr", 'process.stderr.write("DIAGNOSTIC-TEXT"); process.stdout.write("{}"); process.exit(3);', "exited with status 3"],
    ["is killed by a signal", 'process.kill(process.pid, "SIGKILL");', "killed by SIGKILL"],
    ["prints more than the cap", 'process.stdout.write("x".repeat(1024 * 1024 + 1));', "printed more than 1048576 bytes"],
    ["answers a decision of the wrong kind", 'process.stdout.write(JSON.stringify({ proceed: "no" }));', 'decision "proceed" must be a boolean'],
  ])("a command that %s fails, and the chain goes on", async (_case, body, message) => {
    const { events, chain } = await loaded([{ name: "odd", command: [NODE, "odd.mjs"] }], { "odd.mjs": `${READ_STDIN}\n${body}\n` });
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toBeUndefined();
    expect(outcome.changed).toEqual([]);
    const errors = failures(events);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(message);
    // stderr is read and dropped: never in an event.
    expect(JSON.stringify(events.events)).not.toContain("DIAGNOSTIC-TEXT");
  });

  it("a command that prints null, {}, or nothing at all (agh's empty patch), without reading its stdin, passes", async () => {
    const { events, chain } = await loaded(
      [
        { name: "null", command: [NODE, "-e", 'process.stdout.write("null\\n")'] },
        { name: "empty", command: [NODE, "-e", 'process.stdout.write("{}")'] },
        { name: "silent", command: [NODE, "-e", "0"] },
        { name: "blank", command: [NODE, "-e", 'process.stdout.write("\\n  \\n")'] },
      ],
      {},
    );
    const { workItem, harness, tmuxTarget, cwd, harnessSessionId, deliveryId } = spawnContext();
    const outcome = await chain.run("session_spawned", { workItem, harness, tmuxTarget, cwd, harnessSessionId, deliveryId, announce: true });
    expect(outcome.changed).toEqual([]);
    expect(failures(events)).toEqual([]);
  });
});

describe("command entries: the answer is parsed, not cast", () => {
  const PRINTS = (answer: unknown): string =>
    `process.stdin.resume(); process.stdin.on("end", () => process.stdout.write(${JSON.stringify(JSON.stringify(answer))}));`;
  const DECLARED = [{ name: "cmd", command: [NODE, "./hook.mjs"], on: ["work_item_start"] }];

  it("ignores and records unknown keys, and applies the decisions", async () => {
    const { chain, events } = await loaded(DECLARED, { "hook.mjs": PRINTS({ proceed: false, reason: "stop", surplus: 1 }) });
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "cmd", reason: "stop" });
    expect(hookEvents(events)).toContainEqual(["hooks.ignored", { point: "work_item_start", hook: "cmd", fields: ["surplus"] }]);
    expect(failures(events)).toEqual([]);
  });

  it.each<[string, unknown, string]>([
    ["a wrong-typed decision", { proceed: false, reason: 7 }, 'decision "reason" must be a string, not a number'],
    ["a list for a context", [1, 2], "the command printed an array, not a patch object or null"],
    ["a string for a context", "proceed", "the command printed a string, not a patch object or null"],
  ])("fails the hook for %s, with a clear message, applying nothing", async (_, answer, message) => {
    const { chain, events } = await loaded(DECLARED, { "hook.mjs": PRINTS(answer) });
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.changed).toEqual([]);
    expect(outcome.refusal).toBeUndefined();
    expect(failures(events)).toEqual([message]);
  });
});

describe("a command hook at a loop.* event: agh's wire", () => {
  const RECORDS = `${READ_STDIN}
const { writeFileSync } = await import("node:fs");
writeFileSync(new URL("./seen.json", import.meta.url), JSON.stringify(request));
if (request.event === "loop.generation.pre" && request.generation >= 1) process.stdout.write(JSON.stringify({ deny: true, deny_reason: "budget_precondition" }));
`;

  it("reads the flat payload itself, with the entry's with under details.the_loop, and denies in agh's words", async () => {
    const { configDir, chain, events } = await loaded([{ name: "budget", command: [NODE, "budget.mjs"], on: ["loop.generation.pre"], with: { cap: 3 } }], {
      "budget.mjs": RECORDS,
    });
    const payload = generationPre();
    const outcome = await chain.runLoop("loop.generation.pre", payload);
    expect(outcome.denied).toEqual({ hook: "budget", reason: "budget_precondition" });
    const seen = JSON.parse(await readFile(join(configDir, "seen.json"), "utf8")) as Record<string, unknown>;
    const details = (payload.details ?? {}) as Record<string, unknown>;
    const ours = (details["the_loop"] ?? {}) as Record<string, unknown>;
    expect(seen).toEqual({ ...payload, details: { ...details, the_loop: { ...ours, with: { cap: 3 } } } });
    expect(seen).not.toHaveProperty("point");
    expect(seen).not.toHaveProperty("context");
    expect(failures(events)).toEqual([]);
  });

  it.each([
    ["prints nothing", "", undefined],
    ["prints {}", 'process.stdout.write("{}");', undefined],
    ["echoes its payload", "process.stdout.write(JSON.stringify(request));", undefined],
    ["prints text", 'process.stdout.write("deny");', "not one JSON document"],
  ])("at loop.generation.pre, a command that %s does not deny", async (_case, body, failure) => {
    const { chain, events } = await loaded([{ name: "odd", command: [NODE, "odd.mjs"], on: ["loop.generation.pre"] }], {
      "odd.mjs": `${READ_STDIN}\n${body}\n`,
    });
    const outcome = await chain.runLoop("loop.generation.pre", generationPre());
    expect(outcome.denied).toBeUndefined();
    const errors = failures(events);
    if (failure === undefined) expect(errors).toEqual([]);
    else expect(String(errors[0])).toContain(failure);
    expect(hookEvents(events).filter(([type]) => type === "hooks.ignored")).toEqual([]);
  });
});
