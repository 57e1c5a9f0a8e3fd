import { readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { isTemporaryName } from "../../src/state/atomic.js";
import { tmuxTargetFor } from "../../src/registry/record.js";
import type { SessionRecord } from "../../src/registry/record.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { parseWorkItemRef, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { expectCleanExit, startFixture } from "../state/fixtures/children.js";
import type { FixtureProcess } from "../state/fixtures/children.js";

/**
 * The registry's promise across processes: of any number claiming one work item at once, exactly
 * one starts a session, and a kill -9 in the middle of claims and closes never leaves a record
 * that cannot be read. The children run the built registry (dist/), as the daemon and CLI do.
 */

const DIST = pathToFileURL(join(REPO_ROOT, "dist/")).href;
const REF = "github:octo/repo#42";

// Shared by both children: the record a contender builds, named after it.
const RECORD_JS = `
const { parseWorkItemRef, workItemOf, workItemSlug } = await import(${JSON.stringify(`${DIST}workitem/index.js`)});
const { SessionRegistry } = await import(${JSON.stringify(`${DIST}registry/registry.js`)});
const item = workItemOf(parseWorkItemRef(ref), { kind: "issue", url: "https://github.com/octo/repo/issues/42", id: "I_42" });
const slug = workItemSlug(item.ref);
const recordFor = (sessionId) => ({
  version: 1, workItem: item, harness: "claude", harnessSessionId: sessionId, cwd: "/work/" + slug,
  status: "active", createdAt: new Date().toISOString(), lastEventAt: new Date().toISOString(),
  tmuxTarget: "loop-" + slug, recentDeliveries: [], url: item.url,
});
// Generous: eight processes queue on one lock on a machine that may be busy.
const registry = new SessionRegistry({ dir, lock: { timeoutMs: 60000 } });
`;

// Waits for "go", claims once, prints the outcome.
const CLAIM_ONCE = `
import { once } from "node:events";
const [dir, ref, name] = process.argv.slice(2);
${RECORD_JS}
process.stdout.write("ready\\n");
await once(process.stdin, "data");
const result = await registry.claim(item, () => recordFor(name));
process.stdout.write(JSON.stringify({ claimed: result.claimed, sessionId: result.record.harnessSessionId }) + "\\n");
process.exit(0);
`;

// Claims, touches and closes in a loop until killed, printing each finished cycle.
const CYCLE_FOREVER = `
const [dir, ref, name] = process.argv.slice(2);
${RECORD_JS}
for (let cycle = 1; ; cycle++) {
  await registry.claim(item, () => recordFor(name + "-" + cycle));
  await registry.touch(ref, "delivery-" + cycle, new Date());
  await registry.close(ref, "cycle", new Date());
  process.stdout.write("cycle " + cycle + "\\n");
}
`;

async function script(dir: string, name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

// startFixture resolves its script against test/state/fixtures/; an absolute path stays as it is.
const start = (path: string, args: readonly string[]): FixtureProcess => startFixture(path, args);

function itemOf(ref: string): WorkItem {
  return workItemOf(parseWorkItemRef(ref), { kind: "issue", url: "https://github.com/octo/repo/issues/42", id: "I_42" });
}

function recordOf(item: WorkItem, sessionId: string): SessionRecord {
  const slug = workItemSlug(item.ref);
  const now = new Date().toISOString();
  return {
    version: 1,
    workItem: { ...item },
    harness: "claude",
    harnessSessionId: sessionId,
    cwd: `/work/${slug}`,
    status: "active",
    createdAt: now,
    lastEventAt: now,
    tmuxTarget: tmuxTargetFor(slug),
    recentDeliveries: [],
    url: item.url,
  };
}

describe("SessionRegistry.claim across processes", () => {
  it("lets exactly one of eight racing processes start the session, then allows a new one after close", async () => {
    const scripts = await tempDir();
    const registry = new SessionRegistry({ dir: join(await tempDir(), "sessions") });
    const claimOnce = await script(scripts, "claim-once.mjs", CLAIM_ONCE);
    const CONTENDERS = 8;

    const contenders = Array.from({ length: CONTENDERS }, (_, index) => start(claimOnce, [registry.dir, REF, `contender-${index}`]));
    await Promise.all(contenders.map((contender) => contender.line((line) => line === "ready", '"ready"')));
    for (const contender of contenders) contender.child.stdin.write("go\n");
    const outcomes: { claimed: boolean; sessionId: string }[] = [];
    for (const contender of contenders) {
      outcomes.push(JSON.parse(await contender.line((line) => line.startsWith("{"), "its claim")) as (typeof outcomes)[number]);
      await expectCleanExit(contender);
    }

    const winners = outcomes.filter((outcome) => outcome.claimed);
    expect(winners).toHaveLength(1);
    const winner = winners[0]?.sessionId;
    // Every loser was shown the winner's session, and the file holds it.
    expect(outcomes.map((outcome) => outcome.sessionId)).toEqual(Array.from({ length: CONTENDERS }, () => winner));
    expect(registry.get(REF)).toMatchObject({ status: "active", harnessSessionId: winner });
    expect(await readdir(registry.dir)).toEqual([`${workItemSlug(REF)}.json`]);

    expect(await registry.close(REF, "done", new Date())).toMatchObject({ status: "closed", harnessSessionId: winner });
    const again = await registry.claim(itemOf(REF), () => recordOf(itemOf(REF), "after-close"));
    expect(again).toMatchObject({ claimed: true, record: { harnessSessionId: "after-close" } });
  });

  it("leaves a readable record whenever a process is killed with SIGKILL among claims and closes", async () => {
    const scripts = await tempDir();
    const dir = join(await tempDir(), "sessions");
    const registry = new SessionRegistry({ dir, lock: { staleMs: 2_000, timeoutMs: 20_000 } });
    const cycleForever = await script(scripts, "cycle-forever.mjs", CYCLE_FOREVER);
    const ROUNDS = 6;

    for (let round = 0; round < ROUNDS; round++) {
      const cycler = start(cycleForever, [dir, REF, `round-${round}`]);
      // Killed on seeing a random cycle finish: the next one is under way, at some unknown step.
      // At least two: when the previous round died between its claim and its close, this round's
      // first claim finds that session live and its first cycle only closes it; the second claims.
      const cycles = 2 + Math.floor(Math.random() * 3);
      await cycler.line((line) => line === `cycle ${cycles}`, `"cycle ${cycles}" (round ${round})`);
      cycler.child.kill("SIGKILL");
      const { signal } = await cycler.exited;
      expect(signal, `round ${round} stderr:\n${cycler.stderr()}`).toBe("SIGKILL");

      // Whatever instant it died at, the record is one whole version: get() and list() accept it.
      const record = registry.get(REF);
      expect(record?.harnessSessionId ?? "", `round ${round}`).toMatch(new RegExp(`^round-${round}-\\d+$`));
      expect(registry.list().problems).toEqual([]);
      // The dead cycler's lock would go stale by itself (see test/state/race.test.ts); removing it
      // keeps every round from waiting for that, and the last round does wait, below.
      if (round < ROUNDS - 1) await rm(`${registry.pathFor(REF)}.lock`, { recursive: true, force: true });
    }

    // Still usable afterwards, whatever the last kill interrupted.
    await registry.close(REF, "after-kill", new Date());
    const claimed = await registry.claim(itemOf(REF), () => recordOf(itemOf(REF), "survivor"));
    expect(claimed).toMatchObject({ claimed: true, record: { harnessSessionId: "survivor" } });
    expect((await readdir(dir)).filter((name) => !isTemporaryName(name))).toEqual([`${workItemSlug(REF)}.json`]);
  });
});
