/**
 * Figure: what one GitHub poll cycle with nothing new costs — requests sent, rate-limit units spent
 * and wall time — for 20 repositories of 50 labelled items each (and a few comments), read by the
 * GitHub feed through the real client against the in-process fake GitHub (test/support). Budget:
 * zero rate-limit units, i.e. one conditional request per repository per listing, all answered 304.
 * The baseline is a per-item strategy: one listing of the labelled items plus one read of each
 * item's thread, every cycle, without conditional requests — 20 × (1 + 50) requests, each charged;
 * it is run against the same server, so its time is measured too.
 * BENCH_RUNS overrides the number of idle cycles measured; BENCH_QUICK=1 measures 3 over 3
 * repositories of 10 items.
 */
import { GitHubClient } from "../src/trackers/github/client.js";
import { GitHubFeed } from "../src/ingress/github-feed/index.js";
import { FakeGitHub } from "../test/support/fake-github.js";
import { median, percentile, printFigure, printHeading, runsFromEnv, scaled } from "./lib.js";

const runs = runsFromEnv(20, 3);
const REPOSITORIES = scaled(20, 3);
const ITEMS_PER_REPOSITORY = scaled(50, 10);
const COMMENTS_PER_REPOSITORY = 5;
const LABEL = "the-loop: auto-execute";
const TOKEN = "bench-token-not-a-secret";
const BUDGET_UNITS = 0;
/** The per-item strategy is slow by nature (a thousand charged requests a cycle): timed twice. */
const PER_ITEM_RUNS = scaled(2, 1);

interface Cost {
  readonly requests: number;
  readonly units: number;
  readonly ms: number;
}

async function measure(gh: FakeGitHub, run: () => Promise<unknown>): Promise<Cost> {
  gh.clearRequests();
  const units = gh.rateLimitUsed();
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  return { requests: gh.requests.length, units: gh.rateLimitUsed() - units, ms };
}

const gh = await FakeGitHub.start({ token: TOKEN });
try {
  const repos = Array.from({ length: REPOSITORIES }, (_, i) => `octo/repo-${String(i + 1).padStart(2, "0")}`);
  for (const repo of repos) {
    gh.addRepo(repo);
    for (let n = 0; n < ITEMS_PER_REPOSITORY; n++) gh.addIssue(repo, { title: `task ${n + 1}`, user: "alice", labels: [LABEL] });
    for (let c = 0; c < COMMENTS_PER_REPOSITORY; c++) gh.addComment(repo, 1 + c, { user: "alice", body: `note ${c + 1}` });
  }
  const client = new GitHubClient({ apiUrl: gh.apiUrl, tokens: { token: () => Promise.resolve(TOKEN) }, spaceWrites: false });
  const feed = new GitHubFeed({ key: `github:${repos.join(",")}`, client, repos, label: LABEL, isWatched: () => false });

  let cursor: string | undefined;
  const cycle = async (): Promise<void> => {
    const batch = await feed.read(cursor);
    if (batch.errors) throw new Error(batch.errors.join("; "));
    cursor = batch.cursor;
  };
  const baseline = await measure(gh, cycle);
  const first = await measure(gh, cycle);
  const idle: Cost[] = [];
  for (let run = 0; run < runs; run++) idle.push(await measure(gh, cycle));
  const idleRequests = idle[0]?.requests ?? NaN;
  const idleUnits = Math.max(...idle.map((cost) => cost.units));
  const notModified = gh.requests.every((request) => request.status === 304);

  // The per-item strategy: list the armed items, then read every one's comments, unconditionally.
  const perItemCycle = async (): Promise<void> => {
    for (const repo of repos) {
      const [owner = "", name = ""] = repo.split("/");
      const armed = await client.list("GET /repos/{owner}/{repo}/issues", {
        owner,
        repo: name,
        state: "open",
        labels: LABEL,
        per_page: 100,
      });
      if (armed.notModified) continue;
      for (const item of armed.items) {
        const number = typeof item === "object" && item !== null && "number" in item && typeof item.number === "number" ? item.number : undefined;
        if (number === undefined) continue;
        await client.list("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", { owner, repo: name, issue_number: number, per_page: 100 });
      }
    }
  };
  const perItem: Cost[] = [];
  for (let run = 0; run < PER_ITEM_RUNS; run++) {
    // A fresh hourly window each time: five such cycles use one up (it is 5,000 units).
    gh.setRateLimit({ remaining: 5_000 });
    perItem.push(await measure(gh, perItemCycle));
  }

  printHeading(`GitHub poll cycle with nothing new (${REPOSITORIES} repositories × ${ITEMS_PER_REPOSITORY} labelled items)`);
  printFigure({ label: "first sight: requests", value: baseline.requests, unit: "req", note: `${baseline.units} units` });
  printFigure({ label: "first cycle (no ETags yet): requests", value: first.requests, unit: "req", note: `${first.units} units` });
  printFigure({
    label: "idle cycle: requests",
    value: idleRequests,
    unit: "req",
    baseline: perItem[0]?.requests ?? NaN,
    note: notModified ? "all 304" : "NOT all 304",
  });
  printFigure({
    label: "idle cycle: rate-limit units",
    value: idleUnits,
    unit: "units",
    budget: BUDGET_UNITS,
    note: `per-item strategy: ${perItem[0]?.units ?? NaN} units`,
  });
  printFigure({
    label: `idle cycle: duration (median of ${runs})`,
    value: median(idle.map((cost) => cost.ms)),
    unit: "ms",
    baseline: median(perItem.map((cost) => cost.ms)),
    note: `p90 ${percentile(
      idle.map((cost) => cost.ms),
      90,
    ).toFixed(1)} ms`,
  });
  printFigure({ label: `per-item strategy: duration (median of ${PER_ITEM_RUNS})`, value: median(perItem.map((cost) => cost.ms)), unit: "ms" });
} finally {
  await gh.stop();
}
