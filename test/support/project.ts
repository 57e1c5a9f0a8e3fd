import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, inject } from "vitest";
import { stringify } from "yaml";
import { parseEventLine } from "../../src/events/reader.js";
import type { EventRecord } from "../../src/events/reader.js";
import { runCli } from "./cli.js";
import type { CliResult } from "./cli.js";
import { DIR_MARKER, RUN_KEY, RUN_MARKER, describeProcesses, endProcesses, markedProcesses } from "./processes.js";
import { fakeHarnessRouting } from "./fake-project.js";
import { tempDir } from "./temp.js";
import { endTmuxServer } from "./tmux-server.js";
import { waitFor } from "./wait.js";

export { FAKE_HARNESS } from "./fake-project.js";

export interface TranscriptEntry {
  readonly type: "boot" | "input";
  readonly argv?: string[];
  readonly text?: string;
  readonly env?: Record<string, string | null>;
  /** The harness's whole environment, when it was started with FAKE_HARNESS_RECORD_ENV=1. */
  readonly environment?: Record<string, string>;
}

/**
 * A throwaway project wired for integration tests: the local tracker, `alice` authorized, the fake
 * harness (which writes everything it receives to a transcript), and a tmux server of its own so
 * tests never touch a person's sessions.
 */
export interface TestProject {
  readonly dir: string;
  /**
   * The HOME its CLI runs get: a folder of its own beside the project, as an operator's home is
   * beside their projects (a session's sandbox hides the home; it cannot hide the session's own folder).
   */
  readonly home: string;
  readonly root: string;
  readonly socketName: string;
  readonly transcriptFile: string;
  cli(args: readonly string[], env?: Record<string, string | undefined>): Promise<CliResult>;
  events(): Promise<EventRecord[]>;
  waitForEvent(what: string, match: (record: EventRecord) => boolean, timeoutMs?: number): Promise<EventRecord>;
  transcript(): Promise<TranscriptEntry[]>;
  /**
   * Stops any daemon, then ends every process the project's CLI runs started that is still
   * running, and the project's tmux server. Runs once; after each test it runs by itself for
   * every project the test made, after the test's own teardown.
   */
  cleanup(): Promise<void>;
}

/** How long a daemon gets to exit by itself once `stop` has answered, before it is killed. */
const STOPPED_EXIT_GRACE_MS = 3_000;

const open = new Set<TestProject>();

// Registered when this module loads, before any test file's own hooks: vitest runs later-registered
// after-hooks first, so a test's own teardown goes first and this catches what it missed — and
// still runs before tempDir's removal, so no daemon writes into a removed project.
afterEach(async () => {
  for (const project of [...open]) await project.cleanup();
});

export interface ProjectOverrides {
  /** Merged over the routing block; a function receives the transcript path the fake harness should write. */
  readonly routing?: Record<string, unknown> | ((transcriptFile: string) => Record<string, unknown>);
  readonly polling?: Record<string, unknown>;
  /** Top-level blocks set as given (`webhooks`, `integrations.github`, …); `integrations.local` stays. */
  readonly webhooks?: Record<string, unknown>;
  readonly github?: Record<string, unknown>;
  /** The `hooks:` list, as written in the config file. */
  readonly hooks?: readonly unknown[];
  /** The `graph:` block and the `graphs:` list, as written in the config file. */
  readonly graph?: Record<string, unknown>;
  readonly graphs?: readonly unknown[];
  /** The `notify:` block, as written in the config file. */
  readonly notify?: Record<string, unknown>;
  /** The `state:` block, as written in the config file (`store: postgres` and its URL). */
  readonly state?: Record<string, unknown>;
}

export async function testProject(overrides: ProjectOverrides = {}): Promise<TestProject> {
  const dir = await tempDir();
  const home = await tempDir();
  const root = join(dir, ".the-loop");
  const socketName = `loop-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  // In a folder of its own, bound into each session's sandbox: the fake harness writes it from any spawnWorkdir.
  const harnessDir = join(dir, "harness");
  const transcriptFile = join(harnessDir, "transcript.jsonl");
  await mkdir(root, { recursive: true });
  await mkdir(harnessDir, { recursive: true });
  const routing = (typeof overrides.routing === "function" ? overrides.routing(transcriptFile) : overrides.routing) ?? {};
  const config = {
    version: 1,
    integrations: { local: { project: "demo" }, ...(overrides.github ? { github: overrides.github } : {}) },
    ...(overrides.webhooks ? { webhooks: overrides.webhooks } : {}),
    routing: {
      ...fakeHarnessRouting(transcriptFile, harnessDir),
      ...routing,
      // A test's tmux settings go on top of the project's own server, never instead of it.
      tmux: { socketName, harnessKillGraceSeconds: 1, startupGraceSeconds: 0.3, ...(routing.tmux as Record<string, unknown> | undefined) },
    },
    polling: { enabled: true, intervalSeconds: 0.1, sources: [{ provider: "local" }], ...overrides.polling },
    ...(overrides.hooks ? { hooks: overrides.hooks } : {}),
    ...(overrides.graph ? { graph: overrides.graph } : {}),
    ...(overrides.graphs ? { graphs: overrides.graphs } : {}),
    ...(overrides.notify ? { notify: overrides.notify } : {}),
    ...(overrides.state ? { state: overrides.state } : {}),
  };
  await writeFile(join(root, "cli-config.yaml"), stringify(config));
  const eventLog = join(root, "logs", "events.jsonl");

  const stateUrl =
    (overrides.state as { store?: string; url?: string } | undefined)?.store === "postgres" ? (overrides.state as { url?: string }).url : undefined;
  const events = async (): Promise<EventRecord[]> => {
    // state.store: postgres: the event log is the database's table.
    if (stateUrl !== undefined) return tableEvents(stateUrl);
    const text = await readFile(eventLog, "utf8").catch(() => "");
    return text
      .split("\n")
      .map((line) => parseEventLine(line))
      .filter((record): record is EventRecord => record !== undefined);
  };
  let cleaning: Promise<void> | undefined;
  const project: TestProject = {
    dir,
    home,
    root,
    socketName,
    transcriptFile,
    cli: (args, env) => runCli(args, { cwd: dir, env, home }),
    events,
    async waitForEvent(what, match, timeoutMs = 20_000) {
      try {
        return await waitFor(what, async () => (await events()).find(match), { timeoutMs, intervalMs: 50 });
      } catch (error) {
        const recent = (await events()).slice(-15).map((record) => JSON.stringify(record));
        const daemon = await readFile(join(root, "logs", "daemon.out"), "utf8").catch(() => "");
        throw new Error(`${(error as Error).message}\nlast events:\n${recent.join("\n")}\ndaemon output:\n${daemon}`, {
          cause: error,
        });
      }
    },
    async transcript() {
      const text = await readFile(transcriptFile, "utf8").catch(() => "");
      return text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as TranscriptEntry);
    },
    cleanup() {
      cleaning ??= (async () => {
        await runCli(["stop", "--timeout", "20"], { cwd: dir, home });
        // `stop` answers once the daemon's locks are free, and fails when it does not stop in
        // time: either way, nothing started here may outlive the test (a daemon, a CLI a test
        // left running, the git a daemon ran).
        const killed = await endProcesses(markedProcesses({ [RUN_MARKER]: inject(RUN_KEY), [DIR_MARKER]: dir }), STOPPED_EXIT_GRACE_MS);
        if (killed.length > 0) {
          console.warn(`still running ${STOPPED_EXIT_GRACE_MS / 1000}s after \`the-loop stop\` (killed now):\n${describeProcesses(killed)}`);
        }
        await endTmuxServer(socketName);
        open.delete(project);
      })();
      return cleaning;
    },
  };
  open.add(project);
  return project;
}

/** Every event in a state database's table, oldest first (none before the daemon created it). */
async function tableEvents(url: string): Promise<EventRecord[]> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query<{ body: EventRecord }>("SELECT body FROM the_loop_events ORDER BY id");
    return rows.map((row) => row.body);
  } catch {
    // No table yet (the daemon has not migrated the database): no events yet.
    return [];
  } finally {
    await client.end();
  }
}
