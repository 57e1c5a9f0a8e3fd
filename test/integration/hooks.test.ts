import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { isSelfAuthored } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";

/**
 * Loading the `hooks:` declaration in the real CLI and daemon, on the local tracker: a daemon
 * refuses to start on a declaration that does not load (R3.6) and holds no lock; `the-loop ask`
 * runs with no hooks on one (hooks.load_failed), and with a loadable `.ts` hook next to the
 * config it posts the question the hook rewrote (waiting_for_input).
 */

const PACKAGE_ROOT = fileURLToPath(new URL("../..", import.meta.url));

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

/** A project whose hook modules can import `the-loop/sdk/hooks`, as an operator's would once the-loop is installed. */
async function hookedProject(hooks: readonly unknown[]): Promise<TestProject> {
  project = await testProject({ hooks });
  await mkdir(join(project.dir, "node_modules"), { recursive: true });
  await symlink(PACKAGE_ROOT, join(project.dir, "node_modules", "the-loop"), "dir");
  return project;
}

interface ShownItem {
  comments: { author: string; body: string }[];
}

describe("hooks in the daemon and in one-shot commands", () => {
  it("a daemon refuses to start when a hook module raises on import, naming the entry, and holds no lock", async () => {
    const p = await hookedProject([{ name: "broken", path: "broken.mjs" }]);
    await writeFile(join(p.root, "broken.mjs"), 'throw new Error("the hook module is broken");\n');

    const started = await p.cli(["start"]);
    expect(started.code).toBe(1);
    expect(started.stderr).toContain("the daemon exited (2) before it started");
    expect(started.stderr).toContain('hooks[0] "broken"');
    expect(started.stderr).toContain("the hook module is broken");
    const failed = (await p.events()).filter((record) => record.event === "hooks.load_failed");
    expect(failed).toMatchObject([{ hook: "broken" }]);
    const status = await p.cli(["status", "--json"]);
    expect(jsonOf<{ services: { name: string; running: boolean }[] }>(status).services).toEqual([expect.objectContaining({ name: "poller", running: false })]);
  });

  it("a daemon refuses a declaration naming an event-log type under on, listing the points", async () => {
    const p = await hookedProject([{ name: "audit", url: "https://hooks.example.com/rpc", on: ["session.spawned"] }]);
    const started = await p.cli(["start"]);
    expect(started.code).toBe(1);
    expect(started.stderr).toContain('on names "session.spawned", which is not a hook point');
    expect(started.stderr).toContain("work_item_start, session_spawn, session_spawned");
  });

  it("a local hook's unhandled background rejection is recorded, and the daemon goes on", async () => {
    const p = await hookedProject([{ name: "telemetry", path: "telemetry.mjs" }]);
    await writeFile(
      join(p.root, "telemetry.mjs"),
      [
        'import { LifecycleHooks } from "the-loop/sdk/hooks";',
        "export default class Telemetry extends LifecycleHooks {",
        "  sessionSpawned() {",
        "    // Fire and forget, as telemetry is told to; this one's send fails with no one listening.",
        '    void Promise.reject(new Error("telemetry endpoint unreachable"));',
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    const started = await p.cli(["start"]);
    expect(started.code, started.stderr).toBe(0);
    expect((await p.cli(["item", "new", "First", "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);
    const rejected = await p.waitForEvent("the rejection recorded", (record) => record.event === "daemon.unhandled_rejection");
    expect(rejected.error).toContain("telemetry endpoint unreachable");

    expect((await p.cli(["item", "new", "Second", "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);
    await p.waitForEvent("the second spawn", (record) => record.event === "session.spawned" && record.work_item === "local:demo#2");
  });

  it("`sessions start` refuses a declaration that does not load, as the daemon does; `sessions stop` still acts", async () => {
    const p = await hookedProject([{ name: "gate", path: "gate.mjs", required: true }]);
    await writeFile(join(p.root, "gate.mjs"), 'throw new Error("the gate module is broken");\n');
    expect((await p.cli(["item", "new", "Task", "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);

    const started = await p.cli(["sessions", "start", "--work-item", "#1"]);
    expect(started.code).toBe(2);
    expect(started.stderr).toContain('hooks[0] "gate"');
    expect(started.stderr).toContain("the gate module is broken");
    expect((await p.events()).some((record) => record.event === "session.spawned")).toBe(false);

    const stopped = await p.cli(["sessions", "stop", "--work-item", "#1", "--no-comment"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toContain("the lifecycle hooks did not load, so this command runs without them");
  });

  it("`the-loop ask` posts the agent's question unchanged when the hooks do not load, and records why", async () => {
    const p = await hookedProject([{ name: "broken", path: "broken.mjs" }]);
    await writeFile(join(p.root, "broken.mjs"), 'throw new Error("the hook module is broken");\n');
    expect((await p.cli(["item", "new", "Task", "--as", "alice"])).code).toBe(0);

    const asked = await p.cli(["ask", "Which port?", "--work-item", "#1"]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stderr).toContain("the lifecycle hooks did not load, so this command runs without them");
    const item = jsonOf<ShownItem>(await p.cli(["item", "show", "#1", "--json"]));
    expect(item.comments.at(-1)?.body).toContain("Which port?");
    expect((await p.events()).filter((record) => record.event === "hooks.load_failed")).toHaveLength(1);
  });

  it("`the-loop ask` posts the question a local .ts hook rewrote, with its summary, resolved next to the config", async () => {
    const p = await hookedProject([{ name: "ticket-style", path: "hooks/ticket-style.ts", with: { tag: "NEEDS-DECISION" } }]);
    await mkdir(join(p.root, "hooks"));
    await writeFile(
      join(p.root, "hooks", "ticket-style.ts"),
      [
        'import { LifecycleHooks } from "the-loop/sdk/hooks";',
        'import type { WaitingForInputContext } from "the-loop/sdk/hooks";',
        "",
        "export default class TicketStyle extends LifecycleHooks {",
        "  constructor(private readonly options: { tag?: string }) {",
        "    super();",
        "  }",
        "  override waitingForInput(context: WaitingForInputContext): WaitingForInputContext {",
        '    const tag: string = this.options.tag ?? "QUESTION";',
        "    return { ...context, question: `[${tag}] ${context.question}`, summary: `Blocked on ${context.workItem.ref}` };",
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    expect((await p.cli(["item", "new", "Task", "--as", "alice"])).code).toBe(0);

    const asked = await p.cli(["ask", "Which port?", "--work-item", "#1"]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stderr).toBe("");
    const posted = jsonOf<ShownItem>(await p.cli(["item", "show", "#1", "--json"])).comments.at(-1)?.body ?? "";
    expect(isSelfAuthored(posted)).toBe(true);
    expect(posted).toContain("[NEEDS-DECISION] Which port?");
    expect(posted).toContain("**Blocked on local:demo#1**");
    const events = await p.events();
    expect(events.filter((record) => record.event === "hooks.decided")).toMatchObject([
      { point: "waiting_for_input", hook: "ticket-style", changed: ["question", "summary"], work_item: "local:demo#1" },
    ]);
    expect(events.find((record) => record.event === "session.awaiting_input")).toMatchObject({ question: "[NEEDS-DECISION] Which port?" });
  });
});
