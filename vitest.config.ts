import { defineConfig } from "vitest/config";

/**
 * Five projects, each with the timeouts its tests need (`npm test` runs them all):
 *
 * - `unit` starts no process: no daemon, no tmux, no git, no child of any kind, and needs no
 *   build. test/support/no-processes.ts fails a unit test that tries to start one. Its files
 *   share each worker's loaded modules; `unit-module-mocks` holds the few that replace a module.
 *   `npm run test:unit` runs the two alone, in well under a minute on 2 cores.
 * - `integration` drives real things: the CLI as users run it (`bin/the-loop.js` over `dist/`,
 *   built by the global setup), a real daemon, tmux, git, child processes. The leak guard fails a
 *   test that leaves one of them running.
 * - `browser` drives the dashboard's page in headless Chromium (Debian's, through playwright-core)
 *   against a real daemon: test/browser/. Under 5 minutes on 2 cores.
 * - `real-agent` runs the pinned Claude Code CLI (scripts/install-claude-code.ts) against the
 *   model stub, the pinned Codex CLI (scripts/install-codex.ts) against the Responses stub, and
 *   the pinned Gemini CLI (scripts/install-gemini.ts) against the Gemini stub.
 *
 * A file lives in the project of what it does, not of the folder it sits in: a test file outside
 * test/integration/ that starts a process is listed in INTEGRATION below.
 */

const ALL = "test/**/*.test.ts";
const REAL_AGENT = [
  "test/integration/claude-code.test.ts",
  "test/integration/claude-code-mcp.test.ts",
  "test/integration/claude-code-budget.test.ts",
  "test/integration/codex-budget.test.ts",
  "test/integration/gemini-budget.test.ts",
  "test/integration/codex.test.ts",
  "test/integration/agents-side-by-side.test.ts",
  "test/integration/gemini.test.ts",
];
/** Outside test/integration/, the files whose tests start a process or read the build. */
const INTEGRATION = [
  "test/capabilities/consent.test.ts",
  "test/capabilities/predicate.test.ts",
  "test/capabilities/tasks.test.ts",
  "test/cli/ask.test.ts",
  "test/cli/attach.test.ts",
  "test/cli/capability-command.test.ts",
  "test/cli/config.test.ts",
  "test/cli/daemon.test.ts",
  "test/cli/demo.test.ts",
  "test/cli/discovery.test.ts",
  "test/cli/escaped-input.test.ts",
  "test/cli/exit.test.ts",
  "test/cli/foundation.test.ts",
  "test/cli/graph.test.ts",
  "test/cli/hooks-loop.test.ts",
  "test/cli/hooks.test.ts",
  "test/cli/item.test.ts",
  "test/cli/link-pr.test.ts",
  "test/cli/loop-predicate.test.ts",
  "test/cli/loop.test.ts",
  "test/cli/receive.test.ts",
  "test/cli/sessions-control.test.ts",
  "test/cli/task.test.ts",
  "test/cli/upgrade-config.test.ts",
  "test/control/store-race.test.ts",
  "test/control/store.test.ts",
  "test/daemon/leftovers.test.ts",
  "test/daemon/pidfile.test.ts",
  "test/daemon/status-facts.test.ts",
  "test/events/appender.test.ts",
  "test/events/cli.test.ts",
  "test/graph-run/checks.test.ts",
  "test/graph-run/state.test.ts",
  "test/harness/demo-agent.test.ts",
  "test/harness/paste-safety.test.ts",
  "test/harness/tmux-env.test.ts",
  "test/harness/tmux.test.ts",
  "test/hooks/examples.test.ts",
  "test/hooks/loop-parity.test.ts",
  "test/hooks/parity.test.ts",
  "test/hooks/subprocess.test.ts",
  "test/ingress/poller-crash.test.ts",
  "test/ingress/webhook-bounds.test.ts",
  "test/ingress/webhook-daemon.test.ts",
  "test/sdk/import-graph.test.ts",
  "test/dispatch/dispatcher-harness-start.test.ts",
  "test/registry/registry-race.test.ts",
  "test/state/crash.test.ts",
  "test/stores/stores-postgres.test.ts",
  "test/fleet/leases-postgres.test.ts",
  "test/fleet/caps-postgres.test.ts",
  "test/adoption/watchdog-postgres.test.ts",
  "test/adoption/github-workspace-postgres.test.ts",
  "test/ingress/poller-shared-postgres.test.ts",
  "test/forwarding/forward-postgres.test.ts",
  "test/state/postgres-database.test.ts",
  "test/state/postgres-record-store.test.ts",
  "test/graph-driver/node-room-postgres.test.ts",
  "test/trackers/local-database.test.ts",
  "test/state/postgres-event-table.test.ts",
  "test/state/race.test.ts",
  "test/state/sweep.test.ts",
  "test/subprocess/run.test.ts",
  "test/subprocess/tree.test.ts",
  "test/trackers/github/token-host.test.ts",
  "test/trackers/github/token.test.ts",
  "test/trackers/local/concurrency.test.ts",
  "test/workspace/git.test.ts",
  "test/workspace/workspaces.test.ts",
];

/**
 * Unit test files that replace a module (vi.mock): they need modules loaded afresh for them, so
 * they run in a project of their own that isolates each file, where the rest of the unit project
 * shares each worker's loaded modules between files (test/module-mocks.test.ts keeps this list true).
 */
export const UNIT_MODULE_MOCKS = ["test/registry/registry.test.ts", "test/ingress/poller-writes.test.ts"];

export default defineConfig({
  test: {
    // The leak guard tells the processes of one test file from another's by the worker's pid.
    pool: "forks",
    restoreMocks: true,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [ALL],
          exclude: ["test/integration/**", "test/browser/**", ...INTEGRATION, ...REAL_AGENT, ...UNIT_MODULE_MOCKS],
          setupFiles: ["test/support/no-processes.ts", "test/support/unit-isolation.ts"],
          // A worker keeps the modules it loaded from one file to the next: loading them afresh for
          // each of 200 files was two thirds of the project's time. What a file changes of the
          // process is undone after it (test/support/unit-isolation.ts).
          isolate: false,
          unstubEnvs: true,
          unstubGlobals: true,
          // Its tests wait on sockets and timers more than on the CPU: more workers than cores pay.
          maxWorkers: 4,
          // Its own worker count makes it a group of its own: it runs first, and fails fast.
          sequence: { groupOrder: 0 },
          testTimeout: 5_000,
          hookTimeout: 10_000,
        },
      },
      {
        extends: true,
        test: {
          name: "unit-module-mocks",
          include: UNIT_MODULE_MOCKS,
          setupFiles: ["test/support/no-processes.ts"],
          maxWorkers: 4,
          sequence: { groupOrder: 0 },
          testTimeout: 5_000,
          hookTimeout: 10_000,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          sequence: { groupOrder: 1 },
          include: ["test/integration/**/*.test.ts", ...INTEGRATION],
          exclude: REAL_AGENT,
          globalSetup: ["test/support/global-setup.ts"],
          // After every test, nothing it started may still run (test/support/leak-guard.ts).
          setupFiles: ["test/support/leak-guard.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          sequence: { groupOrder: 1 },
          include: ["test/browser/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          setupFiles: ["test/support/leak-guard.ts"],
          // A browser's start and a daemon's, then a page that waits on the event stream.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "real-agent",
          sequence: { groupOrder: 1 },
          include: REAL_AGENT,
          globalSetup: ["test/support/global-setup.ts"],
          setupFiles: ["test/support/leak-guard.ts"],
          // A real agent answering through the model stub: each step is seconds, not milliseconds.
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
