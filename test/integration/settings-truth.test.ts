import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import { testProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * One source of truth for settings, through the real CLI and daemon: with graph.default edited
 * and the daemon not restarted, `status` names the setting not loaded and the fix (exit 3),
 * `graph list` says it, and a CLI start acts as the daemon runs: its graph, its local project
 * (what `#1` names), its tmux server.
 */

const run = promisify(execFile);

interface StatusJson {
  problems: { code: string; message: string; fix: string }[];
}

describe("a setting changed on disk and not loaded by the daemon", () => {
  it("is a status problem naming the key and the restart, graph list says it, and a CLI start runs as the daemon does", async () => {
    const p = await testProject({
      graph: { enabled: true, default: "spec-review" },
      graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
      routing: { control: { requireStartCommand: true } },
    });
    await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    const before = await p.cli(["status", "--json"]);
    expect(jsonOf<StatusJson>(before).problems.filter((problem) => problem.code === "settings-not-loaded")).toEqual([]);

    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);

    // Three keys a reload does not take: the default graph, the local project `#1` belongs to, the sessions' tmux server.
    const file = join(p.root, "cli-config.yaml");
    const config = parse(await readFile(file, "utf8")) as {
      graph: Record<string, unknown>;
      integrations: Record<string, unknown>;
      routing: { tmux: Record<string, unknown> };
    };
    const otherSocket = `${p.socketName}-edited`;
    await writeFile(
      file,
      stringify({
        ...config,
        graph: { ...config.graph, default: "adhoc" },
        integrations: { ...config.integrations, local: { project: "other" } },
        routing: { ...config.routing, tmux: { ...config.routing.tmux, socketName: otherSocket } },
      }),
    );
    await p.waitForEvent("the reload", (r) => r.event === "config.reloaded");

    const status = await p.cli(["status", "--json"]);
    expect(status.code).toBe(3);
    const problem = jsonOf<StatusJson>(status).problems.find((entry) => entry.code === "settings-not-loaded");
    expect(problem?.message).toContain("graph.default");
    expect(problem?.fix).toContain("the-loop stop && the-loop start");

    const list = await p.cli(["graph", "list", "--json"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toContain("has not loaded graph.default");
    expect(jsonOf<{ notLoaded: string[] }>(list).notLoaded).toEqual(["graph.default"]);

    // The CLI's start is the daemon's: the graph it runs, the item `#1` is to it, the tmux server its sessions are on.
    try {
      const start = await p.cli(["sessions", "start", "--work-item", "#1", "--json"]);
      expect(start.code, start.stderr).toBe(0);
      expect(jsonOf<{ workItem: string }>(start).workItem).toBe("local:demo#1");
      expect(start.stderr).toContain("the running daemon has not loaded");
      expect(start.stderr).toContain("integrations.local.project");
      await waitFor("the run", async () => (await p.events()).some((r) => r.event === "graph.started"));
      expect((await graphStatus(p, "local:demo#1")).graph).toBe("spec-review");
      const target = jsonOf<{ session: { tmuxTarget: string } }>(start).session.tmuxTarget;
      await run("tmux", ["-L", p.socketName, "has-session", "-t", target]);
      await expect(run("tmux", ["-L", otherSocket, "has-session", "-t", target])).rejects.toThrow();
    } finally {
      // Only there if the start went to the file's server: ended so nothing outlives the test.
      await run("tmux", ["-L", otherSocket, "kill-server"]).catch(() => undefined);
    }
  });
});
