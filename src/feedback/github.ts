import { branchIssueNumber, closingReferences } from "../ingress/github-links.js";
import { ciFailureKey, isFailingConclusion } from "../routing/feedback.js";
import type { InboundCheck, InboundEvent, LinkSource } from "../routing/inbound.js";
import type { GitHubTracker } from "../trackers/github/tracker.js";
import { formatWorkItemRef, githubItemUrl, parseWorkItemRef, workItemOf } from "../workitem/index.js";
import type { GitHubRef, WorkItem } from "../workitem/index.js";

/**
 * A CI failure from GitHub made routable: its pull request found by the head commit (a fork's
 * pull request is not in the payload's list), a check suite's failing runs read, and whether the
 * log may reach the session decided — by who opened the pull request. Everything GitHub answers
 * is read defensively: what does not have the expected shape is left out, never guessed at.
 */

type Json = Readonly<Record<string, unknown>>;

export interface CheckResolution {
  readonly tracker: GitHubTracker;
  readonly authorizedUsers: ReadonlySet<string>;
}

/** What a pull request says about itself for routing and for the log decision. */
interface PullFacts {
  readonly number: number;
  readonly url: string;
  readonly headSha: string;
  readonly headBranch: string;
  readonly headInRepository: boolean;
  readonly author: string | null;
  readonly body: string;
  readonly state: "open" | "closed";
}

const OPEN_PULLS = "GET /repos/{owner}/{repo}/pulls";
const PULL = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
const SUITE_RUNS = "GET /repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs";

/**
 * The event once per failing check and pull request whose head commit it ran on: with the pull
 * request (and the items it links to) as its work items, its content key, and `logAllowed`. None
 * when no open pull request has the commit at its head (an old commit, a branch without one).
 */
export async function resolveGitHubCheck(event: InboundEvent, resolution: CheckResolution): Promise<InboundEvent[]> {
  const check = event.check;
  if (check === undefined || check.repository === undefined || check.headSha === undefined) return [];
  const host = resolution.tracker.client.host;
  const [owner = "", repo = ""] = check.repository.split("/");
  const repository = { owner, repo };
  const pulls = await pullsAt(resolution.tracker, repository, check);
  if (pulls.length === 0) return [];
  const checks = check.source === "check_suite" && check.suiteId !== undefined ? await failingRunsOf(resolution.tracker, repository, check) : [check];
  const self = await resolution.tracker.selfLogin();
  const selfLogin = self.kind === "known" ? self.login : undefined;
  const events: InboundEvent[] = [];
  for (const pull of pulls) {
    const ref = parsedRef(host, owner, repo, pull.number);
    if (ref === undefined) continue;
    const permission = logPermission(pull, resolution.authorizedUsers, selfLogin);
    for (const one of checks) {
      events.push(routed(event, ref, pull, { ...one, ...permission }));
    }
  }
  return events;
}

/** Whether the log may be delivered: the author is authorized, or the pull request is the-loop's own from a branch of the repository. */
export function logPermission(
  pull: Pick<PullFacts, "author" | "headInRepository">,
  authorized: ReadonlySet<string>,
  selfLogin: string | undefined,
): Pick<InboundCheck, "logAllowed" | "logWithheld"> {
  if (pull.author !== null && authorized.has(pull.author)) return { logAllowed: true };
  if (pull.author !== null && pull.author === selfLogin && pull.headInRepository) return { logAllowed: true };
  const who = pull.author ?? "a deleted account";
  return {
    logAllowed: false,
    logWithheld: `the pull request was opened by ${who}, who is not in routing.authorizedUsers, from a branch the-loop did not create, so its CI output is not passed on`,
  };
}

function routed(event: InboundEvent, ref: GitHubRef, pull: PullFacts, check: InboundCheck): InboundEvent {
  const own = workItemOf(ref, { kind: "pull_request", url: pull.url, id: "" });
  const linkedBy: Record<string, LinkSource> = {};
  const linked: WorkItem[] = [];
  const link = (target: GitHubRef, source: LinkSource): void => {
    const text = formatWorkItemRef(target);
    if (text === own.ref || linkedBy[text] !== undefined) return;
    linkedBy[text] = source;
    linked.push(workItemOf(target, { kind: "issue", url: githubItemUrl(target, "issue"), id: "" }));
  };
  for (const target of closingReferences(pull.body, { host: ref.host, owner: ref.owner, repo: ref.repo, number: ref.number }))
    link(target, "closing-reference");
  const branchNumber = pull.headInRepository ? branchIssueNumber(pull.headBranch) : undefined;
  if (branchNumber !== undefined) {
    const target = parsedRef(ref.host, ref.owner, ref.repo, branchNumber);
    if (target !== undefined) link(target, "branch");
  }
  return {
    ...event,
    deliveryId: `${event.deliveryId}:${own.ref}:${check.name}`,
    workItems: [...linked, own],
    ...(linked.length > 0 ? { linkedBy } : {}),
    pullRequest: { ref: own.ref, headBranch: pull.headBranch, headInRepository: pull.headInRepository },
    itemState: pull.state,
    check,
    contentKey: ciFailureKey(own.ref, pull.headSha, check.name),
  };
}

/** The open pull requests whose head is the check's commit: those the payload names, else every open one of the repository. */
async function pullsAt(tracker: GitHubTracker, repository: { owner: string; repo: string }, check: InboundCheck): Promise<PullFacts[]> {
  const sha = check.headSha?.toLowerCase();
  let candidates: unknown[];
  if (check.pullNumbers !== undefined && check.pullNumbers.length > 0) {
    candidates = [];
    for (const number of check.pullNumbers) {
      const answer = await tracker.client.get(PULL, { ...repository, pull_number: number });
      if (!answer.notModified) candidates.push(answer.data);
    }
  } else {
    // A fork's pull request is in no payload: the open ones are read, and matched by their head.
    const answer = await tracker.client.list(OPEN_PULLS, { ...repository, state: "open", per_page: 100 });
    candidates = answer.notModified ? [] : answer.items;
  }
  const full = `${repository.owner}/${repository.repo}`.toLowerCase();
  return candidates.map((raw) => pullFacts(raw, full)).filter((pull): pull is PullFacts => pull !== undefined && pull.state === "open" && pull.headSha === sha);
}

function pullFacts(raw: unknown, repository: string): PullFacts | undefined {
  const pull = record(raw);
  const head = record(pull?.head);
  if (pull === undefined || head === undefined || typeof pull.number !== "number" || typeof head.sha !== "string") return undefined;
  const headRepo = record(head.repo);
  return {
    number: pull.number,
    url: typeof pull.html_url === "string" ? pull.html_url : "",
    headSha: head.sha.toLowerCase(),
    headBranch: typeof head.ref === "string" ? head.ref : "",
    headInRepository: typeof headRepo?.full_name === "string" && headRepo.full_name.toLowerCase() === repository,
    author: typeof record(pull.user)?.login === "string" ? (record(pull.user)?.login as string) : null,
    body: typeof pull.body === "string" ? pull.body : "",
    state: pull.state === "closed" ? "closed" : "open",
  };
}

/** The pages of a suite's runs read at most: 1,000 runs. */
const SUITE_RUN_PAGES = 10;
const RUNS_PER_PAGE = 100;

/**
 * A failed suite's failing runs, each a check of its own (the same key a check_run event of it gets).
 * The suite's runs are read page by page (a matrix build can have hundreds) until a page holds
 * fewer than a full page or `total_count` are read, at most SUITE_RUN_PAGES pages: the failing
 * runs of a larger suite past its first 1,000 are not read from it (their own check_run
 * deliveries still tell them).
 */
async function failingRunsOf(tracker: GitHubTracker, repository: { owner: string; repo: string }, suite: InboundCheck): Promise<InboundCheck[]> {
  const runs: unknown[] = [];
  for (let page = 1; page <= SUITE_RUN_PAGES; page++) {
    const params = { ...repository, check_suite_id: suite.suiteId ?? 0, filter: "latest", per_page: RUNS_PER_PAGE, page };
    const answer = await tracker.client.get(SUITE_RUNS, params);
    if (answer.notModified) break;
    const body = record(answer.data);
    const pageRuns = body?.check_runs;
    if (!Array.isArray(pageRuns)) break;
    runs.push(...pageRuns);
    const total = typeof body?.total_count === "number" ? body.total_count : undefined;
    if (pageRuns.length < RUNS_PER_PAGE || (total !== undefined && runs.length >= total)) break;
  }
  const checks: InboundCheck[] = [];
  for (const raw of runs) {
    const run = record(raw);
    if (run === undefined || typeof run.name !== "string" || typeof run.id !== "number" || !isFailingConclusion(run.conclusion as string | null)) continue;
    const actions = record(run.app)?.slug === "github-actions";
    const url = typeof run.html_url === "string" && run.html_url.startsWith(`https://${tracker.client.host}/`) ? run.html_url : undefined;
    checks.push({
      source: "check_run",
      name: run.name,
      conclusion: run.conclusion as string,
      ...(url !== undefined ? { url } : {}),
      ...(suite.headSha !== undefined ? { headSha: suite.headSha } : {}),
      ...(suite.repository !== undefined ? { repository: suite.repository } : {}),
      ...(actions ? { jobId: run.id } : {}),
      ...(suite.suiteId !== undefined ? { suiteId: suite.suiteId } : {}),
    });
  }
  return checks;
}

/** The tail of a GitHub Actions job's log, read through the API's redirect without the token (see GitHubClient.redirectedTail). */
export async function jobLogTail(tracker: GitHubTracker, repository: string, jobId: number, maxBytes: number): Promise<Buffer | undefined> {
  const [owner = "", repo = ""] = repository.split("/");
  return tracker.client.redirectedTail(`/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/actions/jobs/${jobId}/logs`, maxBytes);
}

function parsedRef(host: string, owner: string, repo: string, number: number): GitHubRef | undefined {
  try {
    const ref = parseWorkItemRef(`github:${host === "github.com" ? "" : `${host}/`}${owner}/${repo}#${number}`);
    return ref.tracker === "github" ? ref : undefined;
  } catch {
    // A repository name GitHub would not give: nothing to route to.
    return undefined;
  }
}

function record(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
