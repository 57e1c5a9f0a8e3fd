import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import { testProject, type TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * The sandbox around a real session (routing.sandbox, docs/security.md): the daemon starts a
 * probe as the harness, in its bwrap sandbox on a tmux pane, and the probe tries every door an
 * agent would. It finds no secret and no daemon, neither the state root nor another item's
 * folder nor the operator's keys, and every operator command refused; its question and its claim
 * go through, by the session's own socket. With `routing.sandbox.mode: none`, status says so.
 */

const PROBE = fileURLToPath(new URL("../sandbox/session-probe.mjs", import.meta.url));
const SECRET = "webhook-secret-never-in-a-sandbox";
const TOKEN = "ghp_token_never_in_a_sandbox";
const QUESTION = "Which format should the spec use?";

let project: TestProject | undefined;
afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface Outcome<T> {
  ok: boolean;
  value?: T;
  code?: string;
}
interface CliOutcome {
  code: number | string;
  stdout: string;
  stderr: string;
}
interface ProbeReport {
  env: Record<string, string | undefined>;
  processes: { pid: number; argv: string[] | null }[];
  environsWithSecret: string[];
  reads: Record<"shadow" | "config" | "otherWorktree" | "sshKey", Outcome<string>>;
  lists: Record<"stateRoot" | "home", Outcome<string[]>>;
  force: CliOutcome;
  start: CliOutcome;
  comment: CliOutcome;
  ask: CliOutcome;
  claim: CliOutcome;
}

async function probeProject(mode: "auto" | "none"): Promise<{ p: TestProject; report: string }> {
  const p = await testProject({
    graph: { enabled: true, default: "spec-review" },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
    routing: {
      defaultHarness: "probe",
      harnesses: { probe: { command: [process.execPath, PROBE, "probe-report.json", "probe-checks.json"] } },
      sandbox: { mode },
    },
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  // What a sandbox must hide: another item's folder under the state root, the operator's key, the config.
  await mkdir(join(p.root, "workspaces", "octo-repo-7"), { recursive: true });
  await writeFile(join(p.root, "workspaces", "octo-repo-7", "secret.txt"), "another item's work\n");
  await mkdir(join(p.home, ".ssh"), { recursive: true });
  await writeFile(join(p.home, ".ssh", "id_ed25519"), "PRIVATE KEY\n");
  const checks = {
    secrets: [SECRET, TOKEN],
    workItem: "local:demo#1",
    otherItem: "local:demo#2",
    approve: "the-loop:approve",
    question: QUESTION,
    specFile: "spec.md",
    reads: {
      shadow: "/etc/shadow",
      config: join(p.root, "cli-config.yaml"),
      otherWorktree: join(p.root, "workspaces", "octo-repo-7", "secret.txt"),
      sshKey: join(p.home, ".ssh", "id_ed25519"),
    },
    lists: { stateRoot: p.root, home: p.home },
  };
  await writeFile(join(p.dir, "probe-checks.json"), JSON.stringify(checks));
  return { p, report: join(p.dir, "probe-report.json") };
}

describe("a session in its sandbox (real daemon, real bwrap, real tmux)", () => {
  it("finds no door but its own socket: no secret, no daemon, no state, no other folder; operator commands refused; ask and claim go through", async () => {
    const { p, report } = await probeProject("auto");
    project = p;
    const started = await p.cli(["start"], { THE_LOOP_GH_WEBHOOK_SECRET: SECRET, GH_TOKEN: TOKEN, GITHUB_TOKEN: TOKEN });
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Write the spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const sandboxed = await p.waitForEvent("the sandboxed start", (r) => r.event === "session.sandboxed");
    expect(sandboxed).toMatchObject({ work_item: "local:demo#1", sandbox: expect.stringMatching(/^bubblewrap /) });
    const found = await waitFor(
      "the probe's report",
      async () => {
        const text = await readFile(report, "utf8").catch(() => "");
        return text === "" ? undefined : (JSON.parse(text) as ProbeReport);
      },
      { timeoutMs: 60_000 },
    );

    // Its own processes only: a new PID namespace holds bwrap, the probe and what it ran.
    expect(found.environsWithSecret).toEqual([]);
    for (const { argv } of found.processes) {
      const line = (argv ?? []).join(" ");
      expect(line).not.toMatch(/tmux|bin\/the-loop\.js (start|__daemon)|daemon/);
    }
    expect(found.processes.length).toBeLessThan(8);
    // The state root is an empty mask, the home an empty folder; nothing in either is readable.
    expect(found.lists.stateRoot).toEqual({ ok: true, value: [] });
    expect(found.lists.home.ok ? found.lists.home.value : []).not.toContain(".ssh");
    for (const name of ["config", "otherWorktree", "sshKey"] as const) expect(found.reads[name], name).toEqual({ ok: false, code: "ENOENT" });
    // Root's own files are shown empty (as root) or closed (unprivileged), never their content.
    expect(found.reads.shadow.ok ? found.reads.shadow.value : "").not.toMatch(/root:/);
    // The CLI inside finds the session's socket, not the daemon's config.
    expect(found.env.THE_LOOP_SESSION_SOCKET).toBe("/run/the-loop/session/sock");
    expect(found.env.THE_LOOP_CLI_CONFIG).toBeUndefined();
    expect(found.env.PATH?.split(":")[0]).toBe("/run/the-loop/bin");

    // Operator commands: refused inside a session, whatever they name.
    expect(found.force.code).not.toBe(0);
    expect(found.force.stderr).toMatch(/operator command/);
    expect(found.start.code).not.toBe(0);
    expect(found.start.stderr).toMatch(/operator command/);
    expect(found.comment.code).not.toBe(0);
    expect(found.comment.stderr).toMatch(/operator command/);

    // Its own question and its own claim, through its socket.
    expect(found.ask.code, found.ask.stderr).toBe(0);
    expect(JSON.parse(found.ask.stdout)).toMatchObject({ workItem: "local:demo#1", posted: true });
    expect(found.claim.code, found.claim.stderr).toBe(0);
    expect(JSON.parse(found.claim.stdout)).toMatchObject({ moved: true, node: "review" });
    expect((await graphStatus(p, "#1")).node).toBe("review");

    // On the item: the question, marked as the-loop's; no approval in alice's name.
    const shown = jsonOf<{ comments: { author: string; body: string }[] }>(await p.cli(["item", "show", "#1", "--json"]));
    expect(shown.comments.some((comment) => comment.body.includes(QUESTION) && comment.author === "the-loop")).toBe(true);
    expect(shown.comments.filter((comment) => comment.author === "alice")).toEqual([]);
  });

  it("with routing.sandbox.mode: none, status reports the problem and how to fix it", async () => {
    const { p } = await probeProject("none");
    project = p;
    const started = await p.cli(["start"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const status = await p.cli(["status"]);
    expect(status.code).toBe(3);
    expect(status.stdout + status.stderr).toMatch(/routing\.sandbox\.mode is none/);
    expect(status.stdout + status.stderr).toMatch(/routing\.sandbox\.mode: auto/);
    expect(status.stdout).toContain("sessions: unsandboxed — routing.sandbox.mode: none");
  });
});
