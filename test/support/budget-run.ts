import { readFile, readdir } from "node:fs/promises";
import { expect } from "vitest";
import { ARM } from "./builders.js";
import { jsonOf } from "./cli.js";
import { livePanePids, screenOf } from "./real-agent.js";
import { testProject, type TestProject } from "./project.js";
import { waitFor } from "./wait.js";

/**
 * A budget crossed by a real agent CLI (test/integration/*-budget.test.ts), the same for each:
 * the CLI works in a session against its scripted model API, whose every reply reports
 * PER_REQUEST tokens in the API's own wire format. The-loop reads them off the CLI's own
 * transcript; past warnAt (50%) it warns, at BUDGET_TOKENS the item is paused with the figures,
 * the turn under way ended by the harness's interrupt; a bare resume is refused, and
 * `sessions resume --budget +N` raises the limit and goes on.
 */

export const BUDGET_TOKENS = 1000;
/** What every model reply reports: 650 tokens, so the first request passes the warning and the second the limit. */
export const PER_REQUEST = { input: 600, output: 50 } as const;
/**
 * The shell step the scripted agent takes after each reply: longer than a look at the budgets
 * (every 2 s) takes to see the limit, so the interrupt finds the second step still running.
 */
export const WORK_COMMAND = "sleep 6";

/** The agent's script: work on and on until it is told it was resumed (the-loop's resume note), then stop. */
export function toldResumed(lastUserText: string): boolean {
  return lastUserText.includes("was resumed");
}

export interface BudgetAgent {
  /** The harness's name, as routing and the events give it. */
  readonly harness: string;
  /** The routing block for it (defaultHarness, its command, what it needs passed); the budget is added here. */
  readonly routing: Record<string, unknown>;
  /** The environment `the-loop start` runs with: the CLI's home, key and model API. */
  readonly env: Record<string, string>;
  /** The newest user text of each agentic request the model stub has answered so far. */
  agenticTexts(): readonly string[];
  /** What the pane shows once the harness's interrupt ended the turn under way. */
  readonly interrupted: RegExp;
  /** How long the CLI may take from its spawn to its first model request (Codex starts its MCP servers first). */
  readonly firstRequestMs?: number;
}

/** Every process's parent, read off /proc. */
async function parents(): Promise<Map<number, number>> {
  const found = new Map<number, number>();
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    // A process that ended meanwhile: not there.
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "");
    // `pid (comm) state ppid …`, comm may hold spaces and parentheses: the fields after its last `)`.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (Number.isInteger(ppid)) found.set(Number(name), ppid);
  }
  return found;
}

/**
 * Whether the agent's work command is running in session `target`: a process under its pane
 * running it, or a shell running it (`bash -c "sleep 6"`). A sandbox's processes are there too:
 * its PID namespace is visible from here.
 */
async function workRunning(p: TestProject, target: string): Promise<boolean> {
  const panes = new Set(await livePanePids(p.socketName, target));
  const tree = await parents();
  const under = (pid: number): boolean => {
    for (let at: number | undefined = pid, depth = 0; at !== undefined && at > 1 && depth < 64; at = tree.get(at), depth++) if (panes.has(at)) return true;
    return false;
  };
  for (const pid of tree.keys()) {
    if (!under(pid)) continue;
    // Ended meanwhile: not running.
    const argv = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0").filter(Boolean).join(" ");
    if (argv.endsWith(WORK_COMMAND)) return true;
  }
  return false;
}

interface SessionsJson {
  sessions: {
    tmuxTarget: string;
    status: string;
    control: { command: string; source: string; actor: string } | null;
    usage: { tokens: number | null; minutes: number; limits: { tokens?: number } } | null;
  }[];
}
interface ItemJson {
  comments: { author: string | null; body: string }[];
}

/** Waits as waitFor does; a timeout says what the pane, the event log and the model saw. */
async function waitInRun<T>(p: TestProject, agent: BudgetAgent, what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  try {
    return await waitFor(what, probe, { timeoutMs });
  } catch (error) {
    const session = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions[0];
    const screen = session === undefined ? "(no session)" : await screenOf(p, session.tmuxTarget);
    const events = (await p.events())
      .filter((record) => !String(record.event).startsWith("poll."))
      .slice(-15)
      .map((record) => JSON.stringify(record));
    const requests = agent.agenticTexts().map((text) => text.slice(-160));
    throw new Error(`${(error as Error).message}\nscreen:\n${screen}\nevents:\n${events.join("\n")}\nmodel requests:\n${requests.join("\n")}`, {
      cause: error,
    });
  }
}

/**
 * The whole run, from the item's arming to the resumed agent's next request. `started` is given
 * the project as soon as it exists, for the test's own teardown.
 */
export async function crossBudget(agent: BudgetAgent, started: (project: TestProject) => void): Promise<void> {
  const p = await testProject({ routing: { ...agent.routing, budget: { tokens: BUDGET_TOKENS, warnAt: 0.5 } } });
  started(p);
  const start = await p.cli(["start"], agent.env);
  expect(start.code, start.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  expect((await p.cli(["item", "new", "Spend tokens", "--as", "alice"])).code).toBe(0);
  expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent("the spawn", (r) => r.event === "session.spawned", 40_000);
  const wait = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> => waitInRun(p, agent, what, probe, timeoutMs);
  const event = (name: string) => async () => (await p.events()).find((r) => r.event === name);

  // 650 tokens after the first request: past warnAt (500) of 1,000.
  await wait("the agent's first model request", async () => agent.agenticTexts()[0], agent.firstRequestMs ?? 60_000);
  const target = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions[0]?.tmuxTarget ?? "";
  await wait("the agent's first work step", async () => workRunning(p, target), 15_000);
  const warned = await wait("the warning", event("session.budget_warned"));
  expect(warned).toMatchObject({ work_item: "local:demo#1", dimension: "tokens", limit: BUDGET_TOKENS, harness: agent.harness });
  const exceeded = await wait("the limit", event("session.budget_exceeded"));
  expect(exceeded).toMatchObject({ dimension: "tokens", limit: BUDGET_TOKENS, harness: agent.harness, interrupted: true });
  expect(Number(exceeded.used)).toBeGreaterThanOrEqual(2 * (PER_REQUEST.input + PER_REQUEST.output));
  expect(exceeded.used).toBe(exceeded.tokens);

  const listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions[0];
  expect(listed).toMatchObject({ status: "paused", control: { command: "pause", source: "budget", actor: "the-loop" } });
  expect(listed?.usage?.tokens).toBeGreaterThanOrEqual(Number(exceeded.tokens));
  expect(listed?.usage?.limits.tokens).toBe(BUDGET_TOKENS);
  const why = await p.cli(["why", "#1"]);
  // Codex may still record the reply it was reading when interrupted: the figure only grows.
  const whyTokens = /usage +([\d,]+)\/1,000 tok, \d+ min/.exec(why.stdout)?.[1];
  expect(Number(whyTokens?.replaceAll(",", "")), why.stdout).toBeGreaterThanOrEqual(Number(listed?.usage?.tokens));
  // The turn under way ended by the harness's own interrupt, not by the pause alone.
  await wait("the interrupted turn on the pane", async () => agent.interrupted.test(await screenOf(p, target)), 15_000);
  // Ended, the turn asks the model nothing more, not even once a command it had started is done.
  await wait("the work command to end", async () => !(await workRunning(p, target)), 15_000);
  const atLimit = agent.agenticTexts().length;

  const comments = async (): Promise<ItemJson["comments"]> => jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"])).comments;
  const pausedNote = (await comments()).find((c) => c.body.includes("reached its budget"));
  expect(pausedNote?.body).toContain(`${Number(exceeded.used).toLocaleString("en-US")} of 1,000 tokens`);
  expect(pausedNote?.body).toContain("its current turn was interrupted");
  expect(pausedNote?.body).toContain("--budget +N");
  expect(pausedNote?.body).toContain("<!-- the-loop:agent-comment -->");
  expect((await comments()).find((c) => c.body.includes("warning at 50%"))?.body).toContain("<!-- the-loop:agent-comment -->");

  // A resume without a raise would be paused again at once: refused, saying how.
  const bare = await p.cli(["sessions", "resume", "--work-item", "#1"]);
  expect(bare.code).toBe(2);
  expect(bare.stderr).toContain("--budget +N");

  const before = agent.agenticTexts().length;
  expect(before, "model requests after the interrupt").toBe(atLimit);
  const resumed = await p.cli(["sessions", "resume", "--work-item", "#1", "--budget", "+5000"]);
  expect(resumed.code, resumed.stderr).toBe(0);
  expect(resumed.stdout).toContain("raised local:demo#1's tokens limit by 5000, to 6000");
  expect((await p.events()).find((r) => r.event === "session.budget_raised")).toMatchObject({ dimension: "tokens", by: 5000, limit: 6000 });
  await wait("the resumed agent's next request", async () => agent.agenticTexts().slice(before).find(toldResumed), 30_000);
  const after = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions[0];
  expect(after).toMatchObject({ status: "active", usage: { limits: { tokens: 6000 } } });
  // Not paused again: one budget_exceeded only.
  expect((await p.events()).filter((r) => r.event === "session.budget_exceeded")).toHaveLength(1);
}
