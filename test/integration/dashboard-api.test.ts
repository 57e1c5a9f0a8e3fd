import { request } from "node:http";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { graphStatus, sessionEnvOf, specReviewProject } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { FakeGitHub } from "../support/fake-github.js";
import { testProject } from "../support/project.js";
import { RESPONSE_SCHEMAS } from "../../src/dashboard/schemas.js";

/** The answer's JSON, parsed with the route's documented schema (docs/dashboard.md): a shape that drifts fails here. */
function documented<S extends z.ZodType>(schema: S, answer: { readonly text: string }): z.output<S> {
  return schema.parse(JSON.parse(answer.text));
}

/**
 * The dashboard's API against a real daemon on the local tracker, with real HTTP requests: 401
 * without the session cookie on every route, a foreign Host or Origin refused, the one-time login,
 * and actions taken as dashboard.operator through the CLI commands' paths (approve moves the gate
 * as the comment keyword does; pause is a control command with source `dashboard`).
 */

const REF = "local:demo#1";
const ITEM = encodeURIComponent(REF);

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

function call(base: URL, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: { host: base.host, ...headers, ...(body ? { "content-length": String(Buffer.byteLength(body)) } : {}) },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (text += chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
      },
    );
    sent.on("error", reject);
    sent.end(body);
  });
}

/** Opens an event stream and collects what it sends until `stop` is called. */
function stream(base: URL, path: string, cookie: string): { readonly text: () => string; stop(): void } {
  let text = "";
  const sent = request({ host: base.hostname, port: base.port, method: "GET", path, headers: { host: base.host, cookie } }, (response) => {
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => (text += chunk));
  });
  sent.on("error", () => undefined);
  sent.end();
  return { text: () => text, stop: () => sent.destroy() };
}

async function atTheGate(p: TestProject): Promise<void> {
  await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
  const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
  expect(claimed.code, claimed.stderr).toBe(0);
  expect(jsonOf<ClaimJson>(claimed)).toMatchObject({ moved: true, node: "review", status: "waiting" });
}

async function dashboardProject(operator: string | undefined, env: Record<string, string> = {}): Promise<{ p: TestProject; base: URL }> {
  const p = await specReviewProject();
  const configFile = join(p.root, "cli-config.yaml");
  const text = await readFile(configFile, "utf8");
  await writeFile(configFile, `${text}dashboard:\n  enabled: true\n${operator !== undefined ? `  operator: ${operator}\n` : ""}`);
  const started = await p.cli(["start", "--json"], env);
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  const status = await p.cli(["status", "--json"]);
  const dashboard = jsonOf<{ dashboard: { enabled: boolean; url: string | null; operator: string | null } }>(status).dashboard;
  expect(dashboard).toMatchObject({ enabled: true, operator: operator ?? null });
  expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  return { p, base: new URL(dashboard.url ?? "") };
}

async function login(p: TestProject, base: URL): Promise<{ cookie: string; token: string }> {
  const printed = await p.cli(["dashboard", "--json"]);
  expect(printed.code, printed.stderr).toBe(0);
  const url = new URL(jsonOf<{ url: string }>(printed).url);
  expect(url.origin).toBe(base.origin);
  const token = url.searchParams.get("token") ?? "";
  const answer = await call(base, "GET", `${url.pathname}${url.search}`);
  expect(answer.status).toBe(303);
  expect(answer.headers.location).toBe("/");
  const set = String(answer.headers["set-cookie"]);
  expect(set).toMatch(/HttpOnly/);
  expect(set).toMatch(/SameSite=Strict/);
  // The URL works once.
  expect((await call(base, "GET", `${url.pathname}${url.search}`)).status).toBe(401);
  return { cookie: set.split(";")[0] ?? "", token };
}

describe("the dashboard's API, secured, against a real daemon", () => {
  it("answers 401 on every route without the login, refuses a foreign Host, and logs in once per URL without a token in any log", async () => {
    const { p, base } = await dashboardProject("alice");
    const own = { origin: base.origin, "content-type": "application/json" };
    const routes: [string, string][] = [
      ["GET", "/"],
      ["GET", "/api/v1/me"],
      ["GET", "/api/v1/items"],
      ["GET", "/api/v1/sessions"],
      ["GET", "/api/v1/events"],
      ["GET", "/api/v1/events/stream"],
      ["GET", `/api/v1/items/${ITEM}/why`],
      ["GET", `/api/v1/items/${ITEM}/graph`],
      ["GET", `/api/v1/items/${ITEM}/comments`],
      ["GET", `/api/v1/items/${ITEM}/terminal/stream`],
      ["GET", "/nothing-here"],
      ...["start", "stop", "pause", "resume", "approve", "request-changes", "answer", "close"].map((action): [string, string] => [
        "POST",
        `/api/v1/items/${ITEM}/actions/${action}`,
      ]),
    ];
    for (const [method, path] of routes) {
      const answer = await call(base, method, path, method === "POST" ? own : {}, method === "POST" ? "{}" : undefined);
      expect(answer.status, `${method} ${path}`).toBe(401);
    }
    // DNS rebinding: another name for this address is not the dashboard's.
    expect((await call(base, "GET", "/api/v1/items", { host: `rebound.example.com:${base.port}` })).status).toBe(421);
    expect((await call(base, "GET", "/login?token=guessed")).status).toBe(401);

    const { cookie, token } = await login(p, base);
    const me = await call(base, "GET", "/api/v1/me", { cookie });
    expect(me.status).toBe(200);
    expect(documented(RESPONSE_SCHEMAS["GET /api/v1/me"], me)).toMatchObject({ operator: "alice", readOnly: false });
    const page = await call(base, "GET", "/api/v1/events?type=dashboard.*&limit=5", { cookie });
    expect(documented(RESPONSE_SCHEMAS["GET /api/v1/events"], page).events.map((record) => record.event)).toContain("dashboard.logged_in");
    expect((await call(base, "GET", "/api/v1/events?level=loud", { cookie })).status).toBe(400);
    // A forged cookie is no login.
    expect((await call(base, "GET", "/api/v1/me", { cookie: "the_loop_dashboard=forged" })).status).toBe(401);

    await p.cli(["stop"]);
    const log = await readFile(join(p.root, "logs", "events.jsonl"), "utf8");
    const daemonOut = await readFile(join(p.root, "logs", "daemon.out"), "utf8").catch(() => "");
    const status = (await p.cli(["status", "--json"])).stdout;
    for (const text of [log, daemonOut, status]) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(cookie.split("=")[1] ?? "none");
    }
    expect(log).toContain('"dashboard.login_issued"');
    expect(log).toContain('"dashboard.logged_in"');
  });

  it("lists the item live, refuses a cross-origin POST, and approving moves the gate as the keyword does, audited as the dashboard's operator", async () => {
    const { p, base } = await dashboardProject("alice");
    const { cookie } = await login(p, base);
    const events = stream(base, `/api/v1/events/stream?work_item=${ITEM}&type=graph.*`, cookie);
    try {
      expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
      await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
      await waitFor("the boot", async () => (await p.transcript()).some((entry) => entry.type === "boot"));
      const items = documented(RESPONSE_SCHEMAS["GET /api/v1/items"], await call(base, "GET", "/api/v1/items", { cookie }));
      expect(documented(RESPONSE_SCHEMAS["GET /api/v1/sessions"], await call(base, "GET", "/api/v1/sessions", { cookie })).sessions).toHaveLength(1);
      expect(items.items).toEqual([expect.objectContaining({ ref: REF, column: "working", graph: expect.objectContaining({ node: "write" }) })]);

      await atTheGate(p);
      const waiting = documented(RESPONSE_SCHEMAS["GET /api/v1/items"], await call(base, "GET", "/api/v1/items", { cookie }));
      expect(waiting.items[0]?.column).toBe("waiting");

      const approve = `/api/v1/items/${ITEM}/actions/approve`;
      const json = { "content-type": "application/json", cookie };
      // CSRF: another origin, or none at all, is refused before anything is read.
      expect((await call(base, "POST", approve, { ...json, origin: "http://evil.example.com" }, "{}")).status).toBe(403);
      expect((await call(base, "POST", approve, json, "{}")).status).toBe(403);
      expect((await graphStatus(p)).node).toBe("review");

      const approved = await call(base, "POST", approve, { ...json, origin: base.origin }, JSON.stringify({ reason: "reads well" }));
      expect(approved.status, approved.text).toBe(200);
      expect(
        documented(
          RESPONSE_SCHEMAS["POST /api/v1/items/{ref}/actions/{approve|request-changes} (409 with the same fields when the gate did not move)"],
          approved,
        ),
      ).toMatchObject({
        moved: true,
        node: "done",
        status: "done",
      });
      const decided = await p.waitForEvent("the decision", (r) => r.event === "graph.gate_decided");
      expect(decided).toMatchObject({ work_item: REF, decision: "approved", actor: "alice", actor_kind: "operator", via: "dashboard" });
      const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
      const audit = comments.find((c) => c.body.includes("was approved by alice from the-loop's dashboard"));
      expect(audit?.body).toContain("Reason given: reads well");
      expect(audit?.body).toContain("<!-- the-loop");
      const action = await p.waitForEvent("the action", (r) => r.event === "dashboard.action");
      expect(action).toMatchObject({ work_item: REF, action: "approve", actor: "alice", ok: true });

      // The stream saw the decision as it happened.
      await waitFor("the streamed decision", async () => (events.text().includes('"graph.gate_decided"') ? true : undefined));
      expect(events.text()).toContain("event: caught-up");

      // Nothing waits any more: a second approval is refused, 409.
      const again = await call(base, "POST", approve, { ...json, origin: base.origin }, "{}");
      expect(again.status).toBe(409);

      const graph = documented(RESPONSE_SCHEMAS["GET /api/v1/items/{ref}/graph"], await call(base, "GET", `/api/v1/items/${ITEM}/graph`, { cookie }));
      expect(graph.run).toMatchObject({ node: "done", status: "done" });
      expect(graph.graph?.nodes.map((node) => node.id)).toEqual(["write", "review", "done"]);
      const why = documented(RESPONSE_SCHEMAS["GET /api/v1/items/{ref}/why"], await call(base, "GET", `/api/v1/items/${ITEM}/why`, { cookie }));
      expect(why.verdict.state).toBe("graph-done");
      expect(why.timeline[0]?.text).toBeTruthy();
      expect(why.timeline.some((entry) => entry.event === "graph.gate_decided" && entry.text.includes("alice"))).toBe(true);
    } finally {
      events.stop();
    }
  });

  it("names the item, shows its comments as text, and streams its terminal read only until the session is gone", async () => {
    const { p, base } = await dashboardProject("alice");
    const { cookie } = await login(p, base);
    // No session yet: no terminal to show.
    const none = await call(base, "GET", `/api/v1/items/${ITEM}/terminal/stream`, { cookie });
    expect(none.status).toBe(404);
    expect(documented(RESPONSE_SCHEMAS["Every refusal and error (400, 401, 403, 404, 409, 413, 415, 421, 500, 502, 503)"], none).error).toContain(
      "no live session",
    );

    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const terminal = stream(base, `/api/v1/items/${ITEM}/terminal/stream`, cookie);
    try {
      const screens = (): { cols: number; rows: number; text: string }[] =>
        [...terminal.text().matchAll(/^event: screen\ndata: (.*)$/gm)].map((match) =>
          documented(
            RESPONSE_SCHEMAS["GET /api/v1/items/{ref}/terminal/stream (each `event: screen` message's data; `event: ended` when the session is gone)"],
            {
              text: match[1] ?? "",
            },
          ),
        );
      // What the harness printed in its pane, as tmux shows it.
      const ready = await waitFor("the harness's screen", async () => screens().find((screen) => screen.text.includes("fake-harness: ready")));
      expect(ready.cols).toBeGreaterThan(0);
      // Nothing but colours: every escape in it starts an SGR sequence.
      expect(
        ready.text
          .split("\u001b")
          .slice(1)
          .every((part) => /^\[[0-9;:]*m/.test(part)),
      ).toBe(true);

      const listed = documented(RESPONSE_SCHEMAS["GET /api/v1/items"], await call(base, "GET", "/api/v1/items", { cookie }));
      expect(listed.items[0]).toMatchObject({ ref: REF, title: "Write a spec" });

      expect((await p.cli(["item", "comment", "#1", "Please cover \u001b[31mE401\u001b[0m too", "--as", "alice"])).code).toBe(0);
      // The comment reaches the session, and the pane's change reaches the stream.
      await waitFor("the delivery on screen", async () => (screens().some((screen) => screen.text.includes("fake-harness: got")) ? true : undefined));
      const comments = documented(RESPONSE_SCHEMAS["GET /api/v1/items/{ref}/comments"], await call(base, "GET", `/api/v1/items/${ITEM}/comments`, { cookie }));
      const written = comments.comments.find((comment) => comment.author === "alice");
      // The colour codes written into the comment are gone: the page shows text.
      expect(written?.body).toBe("Please cover E401 too");
      expect(written).toMatchObject({ fromTheLoop: false, url: null });
      expect(comments.comments.some((comment) => comment.fromTheLoop)).toBe(true);
      expect((await call(base, "GET", `/api/v1/items/${encodeURIComponent("local:demo#99")}/comments`, { cookie })).status).toBe(404);

      // Closing the session ends the stream.
      expect((await p.cli(["sessions", "close", "--work-item", REF])).code).toBe(0);
      await waitFor("the end of the stream", async () => (terminal.text().includes("event: ended") ? true : undefined));
    } finally {
      terminal.stop();
    }
  });

  it("acts where the CLI command would: a pause for a pull request bound to an issue pauses the issue's session", async () => {
    const token = "ghp_dashboard-binding-test";
    const gh = await FakeGitHub.start({ token });
    try {
      gh.addRepo("octo/repo");
      const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
      const pull = gh.addPullRequest("octo/repo", { title: "Add a health check", user: "alice", head: "health-check" });
      const p = await testProject({
        github: { apiUrl: gh.apiUrl },
        routing: { control: { requireStartCommand: true }, workspace: { enabled: false } },
      });
      const env = { GH_TOKEN: token };
      const configFile = join(p.root, "cli-config.yaml");
      await writeFile(configFile, `${await readFile(configFile, "utf8")}dashboard:\n  enabled: true\n  operator: alice\n`);
      const [issueRef, pullRef] = [issue, pull].map((n) => `github:${gh.host}/octo/repo#${n}`) as [string, string];
      expect((await p.cli(["start", "--json"], env)).code).toBe(0);
      await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
      const started = await p.cli(["sessions", "start", "--work-item", issueRef, "--no-comment"], env);
      expect(started.code, started.stderr).toBe(0);
      expect((await p.cli(["sessions", "link-pr", "--work-item", issueRef, "--pull-request", String(pull)], env)).code).toBe(0);
      const url = jsonOf<{ dashboard: { url: string | null } }>(await p.cli(["status", "--json"])).dashboard.url;
      const base = new URL(url ?? "");
      const { cookie } = await login(p, base);

      const paused = await call(
        base,
        "POST",
        `/api/v1/items/${encodeURIComponent(pullRef)}/actions/pause`,
        { cookie, origin: base.origin, "content-type": "application/json" },
        "{}",
      );
      expect(paused.status, paused.text).toBe(200);
      expect(documented(RESPONSE_SCHEMAS["POST /api/v1/items/{ref}/actions/{start|stop|pause|resume}"], paused)).toMatchObject({
        workItem: issueRef,
        boundFrom: pullRef,
        effect: "paused",
        note: expect.stringContaining(`${pullRef} is bound to ${issueRef}`) as string,
      });
      const listed = jsonOf<{ sessions: { workItem: { ref: string }; status: string; control: { source: string; actor: string } | null }[] }>(
        await p.cli(["sessions", "list", "--json"], env),
      );
      expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.control?.source, s.control?.actor])).toEqual([[issueRef, "paused", "dashboard", "alice"]]);
      // The marked record is on the thread of the item acted on, not the pull request's.
      expect(gh.comments("octo/repo", issue).some((c) => c.body.includes("Issued from the-loop's dashboard by `alice`"))).toBe(true);
      expect(gh.comments("octo/repo", pull)).toEqual([]);
      await p.cli(["stop"]);
    } finally {
      await gh.stop();
    }
  });

  it("answers the agent's question into its session, recorded on the thread, and closes the session", async () => {
    const { p, base } = await dashboardProject("alice", { FAKE_HARNESS_RECORD_ENV: "1" });
    const { cookie } = await login(p, base);
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const env = await sessionEnvOf(p, REF);
    const asked = await p.cli(["ask", "Which error codes?"], { THE_LOOP_SESSION_TOKEN: env.THE_LOOP_SESSION_TOKEN, THE_LOOP_WORK_ITEM: REF });
    expect(asked.code, asked.stderr).toBe(0);
    const question = await waitFor("the question on the board", async () => {
      const listed = documented(RESPONSE_SCHEMAS["GET /api/v1/items"], await call(base, "GET", "/api/v1/items", { cookie }));
      return listed.items[0]?.session?.question ?? undefined;
    });
    expect(question.text).toBe("Which error codes?");
    const own = { cookie, origin: base.origin, "content-type": "application/json" };
    expect((await call(base, "POST", `/api/v1/items/${ITEM}/actions/answer`, own, JSON.stringify({ text: "  " }))).status).toBe(400);
    const answered = await call(base, "POST", `/api/v1/items/${ITEM}/actions/answer`, own, JSON.stringify({ text: "E401 and E403 only" }));
    expect(answered.status, answered.text).toBe(200);
    expect(documented(RESPONSE_SCHEMAS["POST /api/v1/items/{ref}/actions/answer"], answered)).toMatchObject({ workItem: REF, delivered: true });
    await waitFor("the answer in the session", async () =>
      (await p.transcript()).find((entry) => entry.type === "input" && (entry.text ?? "").includes("E401 and E403 only")),
    );
    const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((c) => c.body.includes("alice answered from the-loop's dashboard") && c.body.includes("> E401 and E403 only"))).toBe(true);

    const closed = await call(base, "POST", `/api/v1/items/${ITEM}/actions/close`, own, "{}");
    expect(closed.status, closed.text).toBe(200);
    expect(documented(RESPONSE_SCHEMAS["POST /api/v1/items/{ref}/actions/close"], closed)).toMatchObject({ closed: REF });
    expect((await call(base, "POST", `/api/v1/items/${ITEM}/actions/close`, own, "{}")).status).toBe(409);
  });

  it("pauses as the operator with source dashboard; without dashboard.operator every action is refused", async () => {
    const { p, base } = await dashboardProject("alice");
    const { cookie } = await login(p, base);
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const paused = await call(base, "POST", `/api/v1/items/${ITEM}/actions/pause`, { cookie, origin: base.origin, "content-type": "application/json" }, "{}");
    expect(paused.status, paused.text).toBe(200);
    expect(documented(RESPONSE_SCHEMAS["POST /api/v1/items/{ref}/actions/{start|stop|pause|resume}"], paused)).toMatchObject({
      command: "pause",
      applied: true,
      effect: "paused",
      comment: { posted: true },
    });
    const listed = jsonOf<{ sessions: { status: string; control: { source: string; actor: string } | null }[] }>(await p.cli(["sessions", "list", "--json"]));
    expect(listed.sessions[0]).toMatchObject({ status: "paused", control: { source: "dashboard", actor: "alice" } });
    const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((c) => c.body.includes("Issued from the-loop's dashboard by `alice`"))).toBe(true);
    await p.cli(["stop"]);

    const readOnly = await dashboardProject(undefined);
    const session = await login(readOnly.p, readOnly.base);
    const refused = await call(
      readOnly.base,
      "POST",
      `/api/v1/items/${ITEM}/actions/resume`,
      { cookie: session.cookie, origin: readOnly.base.origin, "content-type": "application/json" },
      "{}",
    );
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("read-only");
  });
});
