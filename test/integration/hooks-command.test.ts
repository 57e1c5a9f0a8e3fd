import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * `command` hooks in the real daemon, on the local tracker: a program next to the config refuses
 * one start at work_item_start (`proceed: false`) and passes the next, and another records each
 * session at session_spawned. Neither sees the daemon's token, though the daemon holds one.
 */

const FAKE_TOKEN = "ghp_fakeDaemonToken0123456789abcdefghij";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

const GATE = `
import { writeFileSync } from "node:fs";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
// agh's framing: the context flat, the point's name as event, the entry's with under the_loop.
const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"));
writeFileSync("gate-env.json", JSON.stringify(process.env));
process.stderr.write("gate diagnostics that stay out of the log\\n");
if (payload.event === "work_item_start" && payload.workItem.number === 1) {
  process.stdout.write(JSON.stringify({ proceed: false, reason: payload.the_loop.with.reason }));
} else {
  process.stdout.write("null");
}
`;

const RECORDER = `#!/usr/bin/env node
import { appendFileSync } from "node:fs";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"));
appendFileSync("spawned.log", payload.event + " " + payload.workItem.ref + " " + payload.harness + "\\n");
// Prints nothing: agh's empty patch, a pass.
`;

interface ShownItem {
  comments: { author: string; body: string }[];
}

describe("command hooks in the daemon", () => {
  it("a command refuses work_item_start with proceed:false, another records session_spawned, and no token reaches them", async () => {
    const p = await testProject({
      hooks: [
        { name: "freeze", command: [process.execPath, "hooks/gate.mjs"], on: ["work_item_start"], with: { reason: "the release is frozen" } },
        { name: "recorder", command: ["./hooks/record.mjs"], on: ["session_spawned"] },
      ],
    });
    project = p;
    await mkdir(join(p.root, "hooks"));
    await writeFile(join(p.root, "hooks", "gate.mjs"), GATE);
    await writeFile(join(p.root, "hooks", "record.mjs"), RECORDER);
    await chmod(join(p.root, "hooks", "record.mjs"), 0o755);

    const started = await p.cli(["start"], { GH_TOKEN: FAKE_TOKEN });
    expect(started.code, started.stderr).toBe(0);

    expect((await p.cli(["item", "new", "Frozen", "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);
    const refused = await p.waitForEvent("the refusal", (record) => record.event === "hooks.refused");
    expect(refused).toMatchObject({ point: "work_item_start", hook: "freeze", reason: "the release is frozen", work_item: "local:demo#1" });
    const comments = jsonOf<ShownItem>(await p.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((comment) => comment.body.includes("the release is frozen") && comment.body.includes("freeze"))).toBe(true);

    expect((await p.cli(["item", "new", "Open", "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);
    await p.waitForEvent("the second spawn", (record) => record.event === "session.spawned" && record.work_item === "local:demo#2");
    // Relative to the config's folder, its working directory.
    const logged = await waitFor("the recorder's line", async () => {
      const text = await readFile(join(p.root, "spawned.log"), "utf8").catch(() => "");
      return text === "" ? undefined : text;
    });
    expect(logged).toBe("session_spawned local:demo#2 fake\n");

    const events = await p.events();
    expect(events.some((record) => record.event === "session.spawned" && record.work_item === "local:demo#1")).toBe(false);
    expect(events.filter((record) => record.event === "hooks.failed")).toEqual([]);
    expect(JSON.stringify(events)).not.toContain("gate diagnostics");
    const env = JSON.parse(await readFile(join(p.root, "gate-env.json"), "utf8")) as Record<string, string>;
    expect(env).toHaveProperty("PATH");
    expect(env).not.toHaveProperty("GH_TOKEN");
    expect(JSON.stringify(env)).not.toContain(FAKE_TOKEN);
  });
});
