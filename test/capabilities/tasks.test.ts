import { access, chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readBundle } from "../../src/capabilities/load.js";
import type { LoadedCapability } from "../../src/capabilities/load.js";
import {
  TASK_CONTENT_MAX_BYTES,
  parsePlan,
  parseTrackerTasks,
  resolveTaskContent,
  resolveTrackerTask,
  resolverFor,
  splitTrackerId,
  taskContentText,
} from "../../src/capabilities/tasks.js";
import type { PlanTask } from "../../src/capabilities/tasks.js";
import { tempDir } from "../support/temp.js";

describe("parsePlan", () => {
  const task = (id: string, title: string, line: number, done = false): PlanTask => ({ id, title, done, line });
  const cases: { what: string; text: string; tasks: PlanTask[] }[] = [
    { what: "an unticked task", text: "- [ ] jira-123 Fix the login", tasks: [task("jira-123", "Fix the login", 1)] },
    { what: "a ticked task, either case", text: "- [x] jira-1 a\n- [X] jira-2 b", tasks: [task("jira-1", "a", 1, true), task("jira-2", "b", 2, true)] },
    { what: "a prefix with a dash", text: "- [ ] beads-gsd-42 Wire it", tasks: [task("beads-gsd-42", "Wire it", 1)] },
    { what: "no title", text: "- [ ] jira-7", tasks: [task("jira-7", "", 1)] },
    {
      what: "other list markers and indentation",
      text: "* [ ] a-1 one\n  + [ ] b-2 two\n1. [ ] c-3 three\n2) [x] d-4 four",
      tasks: [task("a-1", "one", 1), task("b-2", "two", 2), task("c-3", "three", 3), task("d-4", "four", 4, true)],
    },
    { what: "line numbers past prose and CRLF", text: "# Plan\r\n\r\nSome text.\r\n- [ ] jira-9 Last\r\n", tasks: [task("jira-9", "Last", 4)] },
    { what: "a first word without a dash", text: "- [ ] refactor the parser", tasks: [] },
    { what: "an uppercase id", text: "- [ ] JIRA-123 Fix", tasks: [] },
    { what: "an id with trailing punctuation", text: "- [ ] jira-123: Fix", tasks: [] },
    { what: "a trailing dash", text: "- [ ] jira- Fix", tasks: [] },
    { what: "a shell string as the first word", text: "- [ ] jira-1;rm -rf /", tasks: [] },
    { what: "no box", text: "- jira-1 Fix\n[ ] jira-2 Fix", tasks: [] },
    { what: "a box without a space after it", text: "- [ ]jira-1 Fix", tasks: [] },
    { what: "items in a code fence", text: "```md\n- [ ] jira-1 example\n```\n- [ ] jira-2 real", tasks: [task("jira-2", "real", 4)] },
    { what: "an id over 200 characters", text: `- [ ] a-${"1".repeat(200)} long`, tasks: [] },
  ];
  it.each(cases)("$what", ({ text, tasks }) => {
    expect(parsePlan(text)).toEqual(tasks);
  });
});

/** A bundle whose resolver is `resolve.mjs`, and the file it writes the argv it was given to. */
async function bundle(
  options: { id?: string; prefix?: string; timeoutMs?: number; binary?: string; args?: string[] } = {},
): Promise<{ capability: LoadedCapability; argvFile: string }> {
  const root = await tempDir();
  const dir = join(root, "bundle");
  await mkdir(join(dir, "bin"), { recursive: true });
  const argvFile = join(root, "argv.json");
  await writeFile(
    join(dir, "bin", "resolve.mjs"),
    `#!/usr/bin/env node
import { writeFileSync } from "node:fs";
const [out, ...rest] = process.argv.slice(2);
writeFileSync(out, JSON.stringify({ argv: rest, cwd: process.cwd(), secret: process.env.THE_LOOP_TEST_SECRET ?? null }));
const id = rest[rest.length - 1];
if (id.endsWith("-fail")) { console.error("tracker said: 404 no such issue " + id); process.exit(1); }
if (id.endsWith("-sleep")) setTimeout(() => {}, 30000);
else if (id.endsWith("-empty")) process.stdout.write("  \\n\\t\\n");
else if (id.endsWith("-big")) process.stdout.write("x".repeat(${TASK_CONTENT_MAX_BYTES + 1}));
else if (id.endsWith("-exact")) process.stdout.write("y".repeat(${TASK_CONTENT_MAX_BYTES}));
else if (id.endsWith("-signal")) process.kill(process.pid, "SIGKILL");
else process.stdout.write("# " + id + "\\n\\nDo the thing.\\n");
`,
  );
  await chmod(join(dir, "bin", "resolve.mjs"), 0o755);
  const manifest = {
    id: options.id ?? "jira-tasks",
    version: "1.0.0",
    description: "resolves jira tasks",
    taskContentResolver: {
      trackerPrefix: options.prefix ?? "jira",
      invoke: { binary: options.binary ?? "bin/resolve.mjs", args: options.args ?? [argvFile, "{{id}}"], timeoutMs: options.timeoutMs ?? 20_000 },
    },
  };
  await writeFile(join(dir, "capability.json"), JSON.stringify(manifest));
  const outcome = await readBundle(dir);
  if (!outcome.bundle) throw new Error(outcome.problems.join("\n"));
  return { capability: { ...outcome.bundle, configuredPath: dir, values: {} }, argvFile };
}

const argvOf = async (file: string): Promise<{ argv: string[]; cwd: string; secret: string | null }> => JSON.parse(await readFile(file, "utf8")) as never;
const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

describe("resolverFor", () => {
  const fake = (id: string, prefix?: string): LoadedCapability =>
    ({
      dir: `/caps/${id}`,
      file: `/caps/${id}/capability.json`,
      sha256: "0",
      configuredPath: id,
      manifest: { id, ...(prefix ? { taskContentResolver: { trackerPrefix: prefix, invoke: { binary: "x", args: ["{{id}}"], timeoutMs: 1 } } } : {}) },
    }) as unknown as LoadedCapability;
  const installed = [fake("plain"), fake("jira-tasks", "jira"), fake("beads", "beads"), fake("beads-gsd", "beads-gsd")];
  it.each([
    { id: "jira-123", owner: "jira-tasks" },
    { id: "beads-42", owner: "beads" },
    { id: "beads-gsd-42", owner: "beads-gsd" },
    { id: "beads-gsdx-42", owner: "beads" },
    { id: "jiramore-1", owner: undefined },
    { id: "jira-", owner: undefined },
    { id: "jira", owner: undefined },
    { id: "linear-9", owner: undefined },
  ])("$id belongs to $owner (longest prefix)", ({ id, owner }) => {
    expect(resolverFor(installed, id)?.manifest.id).toBe(owner);
  });

  it("with beads-gsd not installed, beads-gsd-42 is beads's", () => {
    expect(resolverFor(installed.slice(0, 3), "beads-gsd-42")?.manifest.id).toBe("beads");
  });
});

describe("resolveTaskContent (real resolver processes)", () => {
  it("answers the resolver's stdout verbatim, run in its bundle with the base environment only", async () => {
    const { capability, argvFile } = await bundle();
    process.env.THE_LOOP_TEST_SECRET = "s3cret";
    try {
      expect(await resolveTaskContent([capability], "jira-123")).toEqual({ kind: "resolved", content: "# jira-123\n\nDo the thing.\n" });
    } finally {
      delete process.env.THE_LOOP_TEST_SECRET;
    }
    expect(await argvOf(argvFile)).toEqual({ argv: ["jira-123"], cwd: capability.dir, secret: null });
  });

  it("refuses to run a resolver whose bundle changed since consent, and runs nothing", async () => {
    const { capability, argvFile } = await bundle();
    await writeFile(join(capability.dir, "bin", "resolve.mjs"), "#!/usr/bin/env node\nprocess.stdout.write('unconsented');\n");
    const resolution = await resolveTaskContent([capability], "jira-123");
    expect(resolution).toMatchObject({ kind: "failed", capability: "jira-tasks", consentChanged: expect.objectContaining({ paths: ["bin/resolve.mjs"] }) });
    expect(resolution.kind === "failed" ? resolution.error : "").toContain("changed since it was consented to");
    expect(await exists(argvFile)).toBe(false);
  });

  it("gives a hostile id as exactly one argv element, never through a shell", async () => {
    const { capability, argvFile } = await bundle();
    const hostile = "jira-1; rm -rf / $(touch pwned) `id` 'x' \"y\"";
    const resolution = await resolveTaskContent([capability], hostile);
    expect(resolution.kind).toBe("resolved");
    expect((await argvOf(argvFile)).argv).toEqual([hostile]);
    expect(await exists(join(capability.dir, "pwned"))).toBe(false);
  });

  it("replaces {{id}} only as a whole element", async () => {
    const root = await tempDir();
    const argvFile = join(root, "argv.json");
    const { capability } = await bundle({ args: [argvFile, "--id={{id}}", "{{id}}-x", "{{id}}"] });
    await resolveTaskContent([capability], "jira-5");
    expect((await argvOf(argvFile)).argv).toEqual(["--id={{id}}", "{{id}}-x", "jira-5"]);
  });

  it("runs a binary named on PATH or by an absolute path", async () => {
    const root = await tempDir();
    const argvFile = join(root, "argv.json");
    const onPath = await bundle({ binary: "node", args: ["bin/resolve.mjs", argvFile, "{{id}}"] });
    expect(await resolveTaskContent([onPath.capability], "jira-2")).toEqual({ kind: "resolved", content: "# jira-2\n\nDo the thing.\n" });
    const absolute = await bundle({ binary: process.execPath, args: ["bin/resolve.mjs", argvFile, "{{id}}"] });
    expect(await resolveTaskContent([absolute.capability], "jira-3")).toEqual({ kind: "resolved", content: "# jira-3\n\nDo the thing.\n" });
  });

  it("no resolver for the prefix is unresolved, and runs nothing", async () => {
    const { capability, argvFile } = await bundle();
    expect(await resolveTaskContent([capability], "linear-1")).toEqual({ kind: "unresolved", reason: "no-resolver" });
    expect(await resolveTaskContent([], "jira-1")).toEqual({ kind: "unresolved", reason: "no-resolver" });
    expect(await exists(argvFile)).toBe(false);
  });

  it("whitespace on stdout is unresolved: empty", async () => {
    const { capability } = await bundle();
    expect(await resolveTaskContent([capability], "jira-1-empty")).toEqual({ kind: "unresolved", reason: "empty" });
  });

  it("a non-zero exit fails, naming the capability, the id, the exit and the end of stderr", async () => {
    const { capability } = await bundle();
    const resolution = await resolveTaskContent([capability], "jira-9-fail");
    expect(resolution).toEqual({ kind: "failed", capability: "jira-tasks", error: expect.any(String) });
    const error = resolution.kind === "failed" ? resolution.error : "";
    expect(error).toContain('capability jira-tasks could not resolve task "jira-9-fail"');
    expect(error).toContain("exit status 1");
    expect(error).toContain("stderr: tracker said: 404 no such issue jira-9-fail");
    expect(error).not.toContain("\n");
  });

  it("a resolver past its timeoutMs is stopped and fails", async () => {
    const { capability } = await bundle({ timeoutMs: 300 });
    const resolution = await resolveTaskContent([capability], "jira-1-sleep");
    expect(resolution.kind).toBe("failed");
    expect(resolution.kind === "failed" ? resolution.error : "").toMatch(/timed out after .* and was stopped/);
  });

  it("a resolver killed by a signal fails", async () => {
    const { capability } = await bundle();
    const resolution = await resolveTaskContent([capability], "jira-1-signal");
    expect(resolution.kind === "failed" ? resolution.error : "").toContain("killed by SIGKILL");
  });

  it("a binary that is not found fails, naming it", async () => {
    const { capability } = await bundle({ binary: "the-loop-no-such-resolver" });
    const resolution = await resolveTaskContent([capability], "jira-1");
    expect(resolution.kind === "failed" ? resolution.error : "").toContain("command not found: the-loop-no-such-resolver");
  });

  it("content up to 256 KiB is resolved; more is a failure, not a cut", async () => {
    const { capability } = await bundle();
    const exact = await resolveTaskContent([capability], "jira-1-exact");
    expect(exact.kind === "resolved" ? exact.content.length : 0).toBe(TASK_CONTENT_MAX_BYTES);
    const big = await resolveTaskContent([capability], "jira-1-big");
    expect(big.kind).toBe("failed");
    expect(big.kind === "failed" ? big.error : "").toContain("more than 256 KiB");
  });

  it.each([
    { what: "a control character", id: "jira-1\nrm -rf /", problem: "control character" },
    { what: "an escape sequence", id: "jira-1\u001b[2J", problem: "control character" },
    { what: "over 200 characters", id: `jira-${"1".repeat(200)}`, problem: "at most 200" },
  ])("an id with $what fails without running the resolver", async ({ id, problem }) => {
    const { capability, argvFile } = await bundle();
    const resolution = await resolveTaskContent([capability], id);
    expect(resolution.kind).toBe("failed");
    const error = resolution.kind === "failed" ? resolution.error : "";
    expect(error).toContain(problem);
    expect(error.includes("\n") || error.includes("\u001b")).toBe(false);
    expect(await exists(argvFile)).toBe(false);
  });

  it("an aborted resolution fails", async () => {
    const { capability } = await bundle();
    const controller = new AbortController();
    const pending = resolveTaskContent([capability], "jira-1-sleep", { signal: controller.signal });
    controller.abort();
    expect((await pending).kind).toBe("failed");
  });
});

describe("parseTrackerTasks (gsd-core's <task> grammar)", () => {
  it.each([
    { what: "double quotes", text: '<task type="auto" tracker-id="beads:GSD-42">', ids: [["beads:GSD-42", 1]] },
    { what: "single quotes, padded, any case", text: "\n<TASK Tracker-Id=' beads:GSD-1 '>", ids: [["beads:GSD-1", 2]] },
    { what: "an opening tag over lines", text: '<task\n  type="auto"\n  tracker-id="beads:GSD-2"\n>', ids: [["beads:GSD-2", 1]] },
    { what: "a colon in the native id, kept unsplit", text: '<task tracker-id="beads:issue:GSD-1">', ids: [["beads:issue:GSD-1", 1]] },
    { what: "an empty tracker-id", text: '<task tracker-id="">', ids: [] },
    { what: "no tracker-id", text: '<task type="auto">', ids: [] },
    { what: "a checkpoint task", text: '<task type="checkpoint:decision" tracker-id="beads:GSD-3">', ids: [] },
    { what: "another element", text: '<tasks tracker-id="beads:GSD-4"> <taskx tracker-id="beads:GSD-5">', ids: [] },
    { what: "an attribute that only ends in tracker-id", text: '<task data-tracker-id="beads:GSD-6">', ids: [] },
    { what: "an element in a code fence", text: '```xml\n<task tracker-id="beads:GSD-7">\n```\n<task tracker-id="beads:GSD-8">', ids: [["beads:GSD-8", 4]] },
  ])("$what", ({ text, ids }) => {
    expect(parseTrackerTasks(text).map((task) => [task.trackerId, task.line])).toEqual(ids);
  });
});

describe("a <task> element's name", () => {
  it.each([
    { what: "its <name>", text: '<task tracker-id="beads:GSD-1">\n  <name>Task 1: wire it</name>\n</task>', name: "Task 1: wire it" },
    { what: "over lines, on one", text: '<task tracker-id="beads:GSD-1"><name>\n  Task 1:\n  wire it\n</name></task>', name: "Task 1: wire it" },
    { what: "none", text: '<task tracker-id="beads:GSD-1"><action>x</action></task>', name: "" },
    { what: "never the next task's", text: '<task tracker-id="beads:GSD-1"></task>\n<task><name>other</name></task>', name: "" },
    { what: "an unclosed last task's", text: '<task tracker-id="beads:GSD-1"><name>last</name>', name: "last" },
  ])("$what", ({ text, name }) => {
    expect(parseTrackerTasks(text).map((task) => task.name)).toEqual([name]);
  });
});

describe("taskContentText", () => {
  it("gives the fields under gsd-core's element names, read_first first, an empty one left out", () => {
    const text = taskContentText({ action: "Wire it", verify: null, acceptanceCriteria: ["a", "b"], readFirst: ["src/x.ts"], done: " " });
    expect(text).toBe("<read_first>\n- src/x.ts\n</read_first>\n\n<action>\nWire it\n</action>\n\n<acceptance_criteria>\n- a\n- b\n</acceptance_criteria>");
  });
});

describe("splitTrackerId", () => {
  it.each([
    { id: "beads:GSD-42", split: { prefix: "beads", id: "GSD-42" } },
    { id: "beads:issue:GSD-1", split: { prefix: "beads", id: "issue:GSD-1" } },
    { id: "standalone", split: undefined },
    { id: ":GSD-1", split: undefined },
    { id: "beads:", split: undefined },
  ])("$id", ({ id, split }) => {
    expect(splitTrackerId(id)).toEqual(split);
  });
});

describe("resolveTrackerTask (real resolver processes)", () => {
  it("gives the resolver the part after the first colon, only where {{id}} is a whole argument", async () => {
    const root = await tempDir();
    const argvFile = join(root, "argv.json");
    const { capability } = await bundle({ prefix: "beads", args: [argvFile, "--id={{id}}", "{{id}}"] });
    // The fixture resolver prints Markdown, not JSON: the argv is what this case is about.
    expect((await resolveTrackerTask([capability], "beads:issue:GSD-1")).kind).toBe("failed");
    expect((await argvOf(argvFile)).argv).toEqual(["--id={{id}}", "issue:GSD-1"]);
  });

  it("runs nothing for an id no resolver owns, or one with no colon", async () => {
    const { capability, argvFile } = await bundle({ prefix: "beads" });
    expect(await resolveTrackerTask([capability], "linear:ENG-1")).toEqual({ kind: "unresolved", reason: "no-resolver" });
    expect(await resolveTrackerTask([capability], "beads-GSD-1")).toEqual({ kind: "unresolved", reason: "not-applicable" });
    expect(await resolveTrackerTask([], "beads:GSD-1")).toEqual({ kind: "unresolved", reason: "no-resolver" });
    expect(await exists(argvFile)).toBe(false);
  });

  it("an empty stdout is a failure, not empty content: the tracker's JSON was expected", async () => {
    const { capability } = await bundle({ prefix: "beads" });
    const resolution = await resolveTrackerTask([capability], "beads:GSD-1-empty");
    expect(resolution.kind).toBe("failed");
    expect(resolution.kind === "failed" ? resolution.error : "").toContain('could not resolve task "beads:GSD-1-empty"');
  });

  it("refuses to run a resolver whose bundle changed since consent", async () => {
    const { capability, argvFile } = await bundle({ prefix: "beads" });
    await writeFile(join(capability.dir, "bin", "resolve.mjs"), "#!/usr/bin/env node\nprocess.stdout.write('{}');\n");
    expect(await resolveTrackerTask([capability], "beads:GSD-1")).toMatchObject({ kind: "failed", consentChanged: expect.anything() });
    expect(await exists(argvFile)).toBe(false);
  });

  it("a control character in the native id fails without running the resolver", async () => {
    const { capability, argvFile } = await bundle({ prefix: "beads" });
    const resolution = await resolveTrackerTask([capability], "beads:GSD-1\nrm -rf /");
    expect(resolution.kind === "failed" ? resolution.error : "").toContain("control character");
    expect(await exists(argvFile)).toBe(false);
  });
});
