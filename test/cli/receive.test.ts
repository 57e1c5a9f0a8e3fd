import { existsSync, readdirSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { ARM } from "../support/builders.js";

const CONFIG = `routing:
  authorizedUsers: [alice]
  spawnOnUnmatched: labeled
  autoExecuteLabel: "${ARM}"
`;

function issueComment(actor: string, labels: string[], number = 7, body = "please fix it"): Record<string, unknown> {
  return {
    action: "created",
    issue: {
      number,
      title: "Parser crashes",
      body: "",
      state: "open",
      labels: labels.map((name) => ({ name })),
      html_url: `https://github.com/octo/repo/issues/${number}`,
      node_id: "I_1",
    },
    comment: { id: 55, body, user: { login: actor }, html_url: "https://github.com/octo/repo/issues/7#c55", created_at: "2025-01-01T00:00:00Z" },
    repository: { full_name: "octo/repo", html_url: "https://github.com/octo/repo" },
    sender: { login: actor },
  };
}

async function project(config = CONFIG): Promise<string> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"));
  await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), config);
  return cwd;
}

async function payloadFile(cwd: string, payload: unknown, name = "delivery.json"): Promise<string> {
  const file = join(cwd, name);
  await writeFile(file, typeof payload === "string" ? payload : JSON.stringify(payload));
  return file;
}

interface ReceiveJson {
  deliveryId: string;
  event: string;
  trackerEvent: string;
  kind: string;
  actor: string | null;
  workItems: { ref: string; kind: string; url: string; linkedBy?: string }[];
  pullRequest?: { ref: string; headBranch?: string; headInRepository?: boolean };
  decision: { action: string; reason?: string; workItem?: string };
  dispatched: boolean;
  outcome?: { settled: boolean; events: { event: string; reason?: string }[] };
}

async function eventLog(cwd: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(cwd, ".the-loop", "logs", "events.jsonl"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("the-loop receive", () => {
  it("prints the decision for a delivery and does nothing else (a dry run)", async () => {
    const cwd = await project();
    const file = await payloadFile(cwd, issueComment("alice", [ARM], 7, "the-loop:start-execution"));
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", file, "--delivery", "d-123"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("delivery d-123: issue_comment.created → commented by alice");
    expect(result.stdout).toContain("github:octo/repo#7 (issue)");
    expect(result.stdout).toContain("start command on github:octo/repo#7 (no live session, armed)");
    expect(result.stdout).toContain("dry run");
    // Nothing spawned, nothing recorded but one event-log line.
    const root = join(cwd, ".the-loop");
    expect(existsSync(join(root, "sessions"))).toBe(false);
    expect(existsSync(join(root, "tmp"))).toBe(false);
    expect(readdirSync(root).sort()).toEqual(["cli-config.yaml", "logs"]);
    const events = await eventLog(cwd);
    expect(events).toEqual([
      expect.objectContaining({ event: "webhook.received", source: "receive", delivery_id: "d-123", github_event: "issue_comment", verified: false }),
    ]);
  });

  it("shows that the label only arms: an ordinary comment waits for the start command", async () => {
    const cwd = await project();
    const file = await payloadFile(cwd, issueComment("alice", [ARM]));
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", file, "--json"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf<ReceiveJson>(result)).toMatchObject({ decision: { action: "drop", reason: "awaiting-start", workItem: "github:octo/repo#7" } });
  });

  it("answers in JSON with --json, reading the payload from stdin", async () => {
    const cwd = await project();
    const payload = {
      action: "opened",
      pull_request: {
        number: 40,
        title: "Fix it",
        body: "Fixes #7",
        state: "open",
        labels: [],
        html_url: "https://github.com/octo/repo/pull/40",
        head: { ref: "issue-9", repo: { full_name: "octo/repo" } },
        base: { ref: "main", repo: { full_name: "octo/repo" } },
      },
      repository: { full_name: "octo/repo", html_url: "https://github.com/octo/repo" },
      sender: { login: "mallory" },
    };
    const result = await runCli(["receive", "--event", "pull_request", "--payload", "-", "--json"], { cwd, input: JSON.stringify(payload) });
    expect(result.code, result.stderr).toBe(0);
    const answer = jsonOf<ReceiveJson>(result);
    expect(answer).toMatchObject({
      event: "pull_request",
      trackerEvent: "pull_request.opened",
      kind: "opened",
      actor: "mallory",
      workItems: [
        { ref: "github:octo/repo#7", kind: "issue", linkedBy: "closing-reference" },
        { ref: "github:octo/repo#9", kind: "issue", linkedBy: "branch" },
        { ref: "github:octo/repo#40", kind: "pull_request" },
      ],
      pullRequest: { ref: "github:octo/repo#40", headBranch: "issue-9", headInRepository: true },
      decision: { action: "drop", reason: "unauthorized-actor", workItem: "github:octo/repo#7" },
      dispatched: false,
    });
    expect(answer.deliveryId).toMatch(/^receive-[0-9a-f-]{36}$/);
    expect(answer.workItems[2]?.linkedBy).toBeUndefined();
  });

  it("says why an event is ignored", async () => {
    const cwd = await project();
    const ping = await payloadFile(cwd, { zen: "Speak like a human.", hook_id: 1 });
    const text = await runCli(["receive", "--event", "ping", "--payload", ping], { cwd });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("ping is ignored (ping)");
    const edited = await payloadFile(cwd, { ...issueComment("alice", []), action: "edited" }, "edited.json");
    const json = await runCli(["receive", "--event", "issue_comment", "--payload", edited, "--json"], { cwd });
    expect(jsonOf(json)).toMatchObject({ event: "issue_comment", ignored: "unsupported-action:edited", decision: null, dispatched: false });
  });

  it("honours webhooks.ghWebhook.events as the receiver does", async () => {
    const cwd = await project(`${CONFIG}webhooks:\n  ghWebhook:\n    events: [issues]\n`);
    const file = await payloadFile(cwd, issueComment("alice", [ARM]));
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", file, "--json"], { cwd });
    expect(jsonOf(result)).toMatchObject({ ignored: "disabled-event" });
  });

  it.each<[string, string | null, RegExp]>([
    ["not JSON", "{nope", /is not JSON/],
    ["empty", "", /is empty/],
    ["a JSON list", "[]", /not a JSON object/],
    ["a missing file", null, /cannot read the payload/],
  ])("refuses a payload that is %s with exit 2", async (_name, content, message) => {
    const cwd = await project();
    const file = content === null ? join(cwd, "missing.json") : await payloadFile(cwd, content);
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", file], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    const json = await runCli(["receive", "--event", "issue_comment", "--payload", file, "--json"], { cwd });
    expect(json.code).toBe(2);
    expect(jsonOf<{ error: { message: string } }>(json).error.message).toMatch(message);
  });

  it("refuses a payload that is not what GitHub sends, naming the field, as the receiver would (400)", async () => {
    const cwd = await project();
    const strings = await payloadFile(cwd, { ...issueComment("alice", []), issue: { ...(issueComment("alice", []).issue as object), labels: [ARM] } });
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", strings, "--json"], { cwd });
    expect(result.code).toBe(2);
    expect(jsonOf<{ error: { message: string } }>(result).error.message).toMatch(/not what GitHub sends.*issue\.labels\.0.*400 \(invalid-payload\)/);
    const elsewhere = await payloadFile(
      cwd,
      { ...issueComment("alice", [ARM]), repository: { full_name: "octo/repo", html_url: "https://evil.example/octo/repo" } },
      "host.json",
    );
    const text = await runCli(["receive", "--event", "issue_comment", "--payload", elsewhere], { cwd });
    expect(text.code).toBe(2);
    expect(text.stderr).toMatch(/repository\.html_url: is not an https URL on github\.com/);
    expect(await eventLog(cwd)).toEqual([]);
  });

  it("refuses a payload over webhooks.ghWebhook.maxBodyBytes, as the receiver would (413)", async () => {
    const cwd = await project(`${CONFIG}webhooks:\n  ghWebhook:\n    maxBodyBytes: 1024\n`);
    const file = await payloadFile(cwd, { ...issueComment("alice", [ARM]), padding: "x".repeat(2_000) });
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", file, "--json"], { cwd });
    expect(result.code).toBe(2);
    expect(jsonOf<{ error: { message: string } }>(result).error.message).toMatch(/maxBodyBytes \(1024\).*413/);
    const stdin = await runCli(["receive", "--event", "issue_comment", "--payload", "-"], {
      cwd,
      input: JSON.stringify({ ...issueComment("alice", [ARM]), padding: "x".repeat(2_000) }),
    });
    expect(stdin.code).toBe(2);
    expect(stdin.stderr).toMatch(/maxBodyBytes/);
    // Nothing was decided, so nothing was recorded.
    expect(await eventLog(cwd)).toEqual([]);
  });

  it.runIf(existsSync("/dev/zero"))("reads no more of an endless payload than the cap allows", async () => {
    const cwd = await project(`${CONFIG}webhooks:\n  ghWebhook:\n    maxBodyBytes: 1024\n`);
    const result = await runCli(["receive", "--event", "issue_comment", "--payload", "/dev/zero"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/maxBodyBytes/);
  });

  it("with --dispatch hands the event to a dispatcher and prints the outcome", async () => {
    const cwd = await project();
    const closed = {
      action: "closed",
      issue: { number: 7, title: "Parser crashes", body: "", state: "closed", labels: [], html_url: "https://github.com/octo/repo/issues/7" },
      repository: { full_name: "octo/repo", html_url: "https://github.com/octo/repo" },
      sender: { login: "alice" },
    };
    const file = await payloadFile(cwd, closed);
    const result = await runCli(["receive", "--event", "issues", "--payload", file, "--dispatch", "--json", "--delivery", "d-close"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    const answer = jsonOf<ReceiveJson>(result);
    expect(answer.decision).toEqual({ action: "drop", reason: "no-session", workItem: "github:octo/repo#7" });
    expect(answer.dispatched).toBe(true);
    expect(answer.outcome?.settled).toBe(true);
    expect(answer.outcome?.events).toContainEqual(expect.objectContaining({ event: "routing.dropped", reason: "no-session" }));
    const text = await runCli(["receive", "--event", "issues", "--payload", file, "--dispatch"], { cwd });
    expect(text.stdout).toContain("dispatched settled");
    expect(text.stdout).toContain("routing.dropped");
  });
});
