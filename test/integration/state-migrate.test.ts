import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { storesOn } from "../../src/stores/stores.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import { sessionRecord } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { postgresProjects, queryRows } from "../support/postgres-project.js";

/** `the-loop state migrate --to postgres`: the real CLI copying a file state root into a real server. */

const postgres = postgresProjects();

interface Report {
  verified: boolean;
  kinds: { name: string; files: number; copied: number; unchanged: number; kept: number; problems: unknown[]; verified: boolean }[];
}

async function countRows(url: string): Promise<Record<string, number>> {
  const rows = await queryRows<{ kind: string; n: string }>(
    url,
    "SELECT CASE WHEN kind = 'document' THEN item ELSE kind END AS kind, count(*)::text AS n FROM the_loop_records WHERE body IS NOT NULL GROUP BY 1",
  );
  return Object.fromEntries(rows.map((row) => [row.kind, Number(row.n)]));
}

describe("the-loop state migrate --to postgres", () => {
  it("copies every record once, verifies the counts, leaves the files, and is refused while the daemon runs", async () => {
    const url = await postgres.database();
    const p = await postgres.project();
    const paths = deriveStatePaths(configSchema.parse({}), p.dir);
    const stores = storesOn(paths);
    for (const n of [1, 2, 3]) {
      const item = workItemOf(parseWorkItemRef(`local:demo#${n}`), { kind: "issue", url: `file:///demo/${n}`, id: String(n) });
      await stores.registry.claim(item, () => sessionRecord(item, n === 3 ? { status: "closed" } : {}));
    }
    await stores.control.transaction("local:demo#1", (tx) =>
      tx.write({ version: 1, ref: "local:demo#1", command: "pause", source: "cli", actor: "ana", requestedAt: new Date().toISOString(), effect: "recorded" }),
    );
    await stores.startQueue.transaction(async () => ({
      entries: [{ ref: "local:demo#4", harness: "fake", queuedAt: new Date().toISOString() }],
      result: undefined,
    }));
    const sessionFile = stores.registry.pathFor("local:demo#1");
    const before = await readFile(sessionFile, "utf8");
    const env = { THE_LOOP_STATE_URL: url };

    const first = await p.cli(["state", "migrate", "--to", "postgres", "--json"], env);
    expect(first.code, first.stderr + first.stdout).toBe(0);
    const report = jsonOf<Report>(first);
    expect(report.verified).toBe(true);
    const byName = Object.fromEntries(report.kinds.map((kind) => [kind.name, kind]));
    expect(byName.sessions).toMatchObject({ files: 3, copied: 3, unchanged: 0, kept: 0, verified: true });
    expect(byName.control).toMatchObject({ files: 1, copied: 1 });
    expect(byName["start-queue"]).toMatchObject({ files: 1, copied: 1 });
    expect(await countRows(url)).toMatchObject({ sessions: 3, control: 1, "start-queue": 1 });
    // The files are left as they were.
    expect(await readFile(sessionFile, "utf8")).toBe(before);

    // Again: nothing is copied twice.
    const again = jsonOf<Report>(await p.cli(["state", "migrate", "--to", "postgres", "--json"], env));
    expect(again.kinds.find((kind) => kind.name === "sessions")).toMatchObject({ files: 3, copied: 0, unchanged: 3 });
    expect(await countRows(url)).toMatchObject({ sessions: 3, control: 1, "start-queue": 1 });
    const text = await p.cli(["state", "migrate", "--to", "postgres"], env);
    expect(text.stdout).toMatch(/sessions\s+3\s+0\s+3\s+0\s+0\s+yes/);
    expect(text.stdout).toContain("next: set state.store: postgres");

    // While the daemon runs on the state root, the copy is refused.
    expect((await p.cli(["start", "--json"])).code).toBe(0);
    const refused = await p.cli(["state", "migrate", "--to", "postgres", "--json"], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("stop it (`the-loop stop`) before migrating its state");
  }, 90_000);
});
