import { createHash, createHmac, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";

/**
 * An in-process stand-in for the GitHub REST API and its webhook deliveries, for tests only.
 *
 * It keeps a small state model (repositories, issues, pull requests, comments, reviews, labels,
 * reactions) and serves it with the behaviour the-loop has to get right against the real service:
 * Link pagination, `since` filters, weak ETags with free 304s, rate-limit headers and scripted
 * primary/secondary limits, bad credentials, and injected server errors. Tests change the model
 * directly (as a person on github.com would) and assert on what the-loop sent (`requests`,
 * `comments`, `reactions`).
 *
 * Two clocks, on purpose: timestamps in the model follow a fake clock (real time plus `advance`)
 * so tests can order events without sleeping, while rate-limit reset times follow the real clock,
 * because clients really sleep until `x-ratelimit-reset`.
 */

export interface RequestLogEntry {
  method: string;
  /** Decoded, without the `/api/v3` prefix and without the query, e.g. "/repos/octo/repo/issues". */
  path: string;
  query: Record<string, string>;
  status: number;
  ifNoneMatch?: string;
  /** Whether the request carried the configured token (any token when none is configured). */
  authorized: boolean;
  at: number;
}

export interface RateLimitScript {
  /** Default 1. */
  count?: number;
  /** Counted from the `rateLimitNext` call. */
  resetInSeconds: number;
  secondary?: boolean;
  /** Secondary limits only; defaults to `resetInSeconds`. */
  retryAfterSeconds?: number;
}

export interface FakeGitHubOptions {
  token?: string;
  /** The login comments, labels and reactions made through the API are attributed to. */
  botLogin?: string;
}

export interface FakeUser {
  login: string;
  id: number;
  node_id: string;
  type: "User" | "Bot";
  html_url: string;
  site_admin: boolean;
}

export interface FakeLabel {
  id: number;
  node_id: string;
  url: string;
  name: string;
  color: string;
  default: boolean;
  description: string | null;
}

export interface FakeRepository {
  id: number;
  node_id: string;
  name: string;
  full_name: string;
  owner: FakeUser;
  private: boolean;
  html_url: string;
  url: string;
  clone_url: string;
  default_branch: string;
  fork: boolean;
  archived: boolean;
  visibility: "public";
}

export interface FakeIssue {
  url: string;
  repository_url: string;
  labels_url: string;
  comments_url: string;
  events_url: string;
  html_url: string;
  id: number;
  node_id: string;
  number: number;
  title: string;
  body: string | null;
  user: FakeUser;
  labels: FakeLabel[];
  state: "open" | "closed";
  state_reason: "completed" | "not_planned" | "reopened" | null;
  locked: boolean;
  assignee: null;
  assignees: FakeUser[];
  milestone: null;
  comments: number;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  author_association: string;
  draft?: boolean;
  pull_request?: { url: string; html_url: string; diff_url: string; patch_url: string; merged_at: string | null };
}

export interface FakeBranchRef {
  label: string;
  ref: string;
  sha: string;
  user: FakeUser;
  repo: FakeRepository;
}

export interface FakePull {
  url: string;
  id: number;
  node_id: string;
  html_url: string;
  diff_url: string;
  patch_url: string;
  issue_url: string;
  comments_url: string;
  review_comments_url: string;
  number: number;
  state: "open" | "closed";
  locked: boolean;
  title: string;
  body: string | null;
  user: FakeUser;
  labels: FakeLabel[];
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  merged_at: string | null;
  merge_commit_sha: string | null;
  draft: boolean;
  head: FakeBranchRef;
  base: FakeBranchRef;
  author_association: string;
  merged: boolean;
  mergeable: boolean | null;
  merged_by: FakeUser | null;
  comments: number;
  review_comments: number;
  commits: number;
  additions: number;
  deletions: number;
  changed_files: number;
}

export interface FakeComment {
  id: number;
  node_id: string;
  url: string;
  html_url: string;
  issue_url: string;
  body: string;
  user: FakeUser;
  created_at: string;
  updated_at: string;
  author_association: string;
}

export type ReviewState = "COMMENTED" | "APPROVED" | "CHANGES_REQUESTED" | "PENDING";

export interface FakeReview {
  id: number;
  node_id: string;
  user: FakeUser;
  body: string;
  state: ReviewState;
  html_url: string;
  pull_request_url: string;
  commit_id: string;
  author_association: string;
  /** Absent while the review is PENDING, as on GitHub. */
  submitted_at?: string;
}

export interface FakeReviewComment {
  id: number;
  node_id: string;
  url: string;
  pull_request_review_id: number | null;
  diff_hunk: string;
  path: string;
  line: number;
  original_line: number;
  side: "RIGHT";
  commit_id: string;
  original_commit_id: string;
  user: FakeUser;
  body: string;
  created_at: string;
  updated_at: string;
  html_url: string;
  pull_request_url: string;
  author_association: string;
  in_reply_to_id?: number;
}

export interface FakeReaction {
  subject: "issue" | "issue_comment" | "review_comment";
  repo: string;
  /** The issue number for `issue`, else the comment id. */
  id: number;
  content: string;
  user: string;
}

export type IssueAction = "opened" | "closed" | "reopened" | "labeled" | "unlabeled" | "edited";

export interface IssuesPayload {
  action: IssueAction;
  issue: FakeIssue;
  label?: FakeLabel;
  changes?: Record<string, unknown>;
  repository: FakeRepository;
  sender: FakeUser;
}

export interface IssueCommentPayload {
  action: "created" | "edited" | "deleted";
  issue: FakeIssue;
  comment: FakeComment;
  changes?: Record<string, unknown>;
  repository: FakeRepository;
  sender: FakeUser;
}

export interface PullRequestPayload {
  action: string;
  number: number;
  pull_request: FakePull;
  label?: FakeLabel;
  repository: FakeRepository;
  sender: FakeUser;
}

export interface PullRequestReviewPayload {
  action: "submitted";
  review: FakeReview;
  pull_request: FakePull;
  repository: FakeRepository;
  sender: FakeUser;
}

export interface PullRequestReviewCommentPayload {
  action: "created";
  comment: FakeReviewComment;
  pull_request: FakePull;
  repository: FakeRepository;
  sender: FakeUser;
}

/** Webhook payloads built from the current state model. */
export interface FakePayloads {
  issues(repo: string, number: number, action: IssueAction, sender: string, label?: string): IssuesPayload;
  issueComment(repo: string, number: number, comment: FakeComment, action?: "created" | "edited" | "deleted"): IssueCommentPayload;
  pullRequest(repo: string, number: number, action: string, sender: string, label?: string): PullRequestPayload;
  pullRequestReview(repo: string, pr: number, review: FakeReview, action?: "submitted"): PullRequestReviewPayload;
  pullRequestReviewComment(repo: string, pr: number, comment: FakeReviewComment, action?: "created"): PullRequestReviewCommentPayload;
}

export interface IssueEventRecord {
  id: number;
  number: number;
  event: "labeled" | "unlabeled" | "closed" | "reopened" | "merged";
  actor: string;
  created_at: string;
  label?: string;
}

const RATE_LIMIT = 5000;
const RATE_WINDOW_SECONDS = 3600;
const REACTIONS = new Set(["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]);
const DOCS = "https://docs.github.com/rest";

interface PullState {
  head: string;
  headRepo: string;
  base: string;
  headSha: string;
  pullId: number;
  merged: boolean;
  mergedAt: string | null;
  mergedBy: string | null;
}

interface ItemState {
  number: number;
  id: number;
  title: string;
  body: string | null;
  user: string;
  labels: string[];
  state: "open" | "closed";
  stateReason: FakeIssue["state_reason"];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  pr?: PullState;
}

interface RepoState {
  id: number;
  fullName: string;
  owner: string;
  name: string;
  defaultBranch: string;
  cloneUrl: string;
  nextNumber: number;
  items: Map<number, ItemState>;
  labels: Map<string, { id: number; name: string }>;
  collaborators: Set<string>;
  comments: Array<{ number: number; json: FakeComment }>;
  reviews: Array<{ number: number; json: FakeReview }>;
  reviewComments: Array<{ number: number; json: FakeReviewComment }>;
  events: IssueEventRecord[];
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

interface Context {
  method: string;
  /** Without the prefix, as sent (still percent-encoded): what Link headers are built from. */
  rawPath: string;
  params: URLSearchParams;
  body: unknown;
}

type Handler = (ctx: Context, args: string[]) => Reply;

function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function nodeId(prefix: string, id: number): string {
  return `${prefix}_kwDO${Buffer.from(String(id)).toString("base64url")}`;
}

function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function notFound(): never {
  throw new HttpError(404, "Not Found");
}

function invalid(resource: string, field: string, code = "invalid"): never {
  throw new HttpError(422, "Validation Failed", { errors: [{ resource, field, code }] });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Matches decoded path segments; `:n` takes digits only, `:x` any segment. */
function matchRoute(pattern: readonly string[], segments: readonly string[]): string[] | undefined {
  if (pattern.length !== segments.length) return undefined;
  const args: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const part = pattern[i] as string;
    const segment = segments[i] as string;
    if (part === ":n") {
      if (!/^\d+$/.test(segment)) return undefined;
      args.push(segment);
    } else if (part.startsWith(":")) {
      args.push(segment);
    } else if (part !== segment) {
      return undefined;
    }
  }
  return args;
}

/** Sort by a timestamp, ties broken by id so that same-second records keep creation order. */
function byTime<T>(items: T[], time: (item: T) => string, id: (item: T) => number, direction: "asc" | "desc"): T[] {
  const factor = direction === "asc" ? 1 : -1;
  return [...items].sort((a, b) => factor * (Date.parse(time(a)) - Date.parse(time(b)) || id(a) - id(b)));
}

function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === "*") return true;
  const strip = (tag: string): string => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => strip(tag) === strip(etag));
}

export class FakeGitHub {
  readonly port: number;
  readonly host: string;
  readonly apiUrl: string;
  readonly requests: RequestLogEntry[] = [];
  /** When set, every response carries `X-Poll-Interval`. */
  pollInterval?: number;
  /**
   * When set, `GET /user` answers this status until it is cleared (403 is what a GitHub App
   * installation token always gets there), whatever else is scripted.
   */
  userFailure?: number;
  readonly payload: FakePayloads;

  private readonly token: string | undefined;
  private readonly botLogin: string;
  private readonly htmlBase: string;
  private offsetMs = 0;
  private nextId = 1_000_001;
  private readonly users = new Map<string, number>();
  private readonly repos = new Map<string, RepoState>();
  private readonly foreignRepoIds = new Map<string, number>();
  private readonly reactionLog: FakeReaction[] = [];
  private readonly reactionIds = new Map<FakeReaction, number>();
  private readonly failures: number[] = [];
  private charged = 0;
  private windowUsed = 0;
  private windowResetMs: number;
  private primary: { remaining: number; resetAtMs: number } | undefined;
  private secondary: { remaining: number; retryAfter: number } | undefined;
  private stopped: Promise<void> | undefined;
  private readonly routes: Array<{ method: string; pattern: string[]; handler: Handler }> = [];
  private readonly checkRuns = new Map<number, { repo: string; json: Record<string, unknown>; log: string }>();
  /** Check suites: GitHub makes one per app and head commit, and a check run belongs to its commit's suite of its app. */
  private readonly checkSuites = new Map<number, { repo: string; sha: string; app: string; createdAt: string }>();
  /** Commit statuses, oldest first, as `POST /repos/{owner}/{repo}/statuses/{sha}` makes them. */
  private readonly statuses: Array<{ repo: string; sha: string; json: Record<string, unknown> }> = [];
  /** Where job logs are served from: another host (`localhost`, not the API's 127.0.0.1), as GitHub's blob storage is. */
  private logServer: { server: Server; port: number } | undefined;
  /** Every request the log host got, with the Authorization header it carried (none is the point). */
  readonly logRequests: Array<{ path: string; authorization: string | undefined }> = [];

  private constructor(
    private readonly server: Server,
    port: number,
    options: FakeGitHubOptions,
  ) {
    this.port = port;
    this.host = `127.0.0.1:${port}`;
    this.apiUrl = `http://${this.host}/api/v3`;
    this.htmlBase = `http://${this.host}`;
    this.token = options.token;
    this.botLogin = options.botLogin ?? "the-loop-bot";
    this.windowResetMs = this.ceilSecond(Date.now() + RATE_WINDOW_SECONDS * 1000);
    this.payload = this.payloads();
    this.defineRoutes();
  }

  static async start(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    const fake = new FakeGitHub(server, (server.address() as AddressInfo).port, options);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      fake.handle(req, res).catch(() => {
        if (!res.headersSent) {
          res.statusCode = 500;
          res.end();
        } else {
          res.destroy();
        }
      });
    });
    return fake;
  }

  /** Also drops idle keep-alive sockets, which a client's connection pool would otherwise hold open. */
  stop(): Promise<void> {
    const logs = this.logServer?.server;
    this.stopped ??= Promise.all([
      new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        this.server.closeAllConnections();
      }),
      new Promise<void>((resolve) => {
        if (logs === undefined) return resolve();
        logs.close(() => resolve());
        logs.closeAllConnections();
      }),
    ]).then(() => undefined);
    return this.stopped;
  }

  // ---- checks ----------------------------------------------------------------------------------

  /**
   * A completed check run of GitHub Actions (its id is its job's id) on `sha`, with the job's log;
   * GitHub's job-log endpoint answers with a redirect to the log host. It joins the check suite of
   * its app on that commit (made with the first run), whose runs `GET …/check-suites/{id}/check-runs` lists.
   */
  async addCheckRun(repo: string, init: { sha: string; name: string; conclusion: string; log?: string; app?: string }): Promise<Record<string, unknown>> {
    const state = this.repo(repo);
    if (this.logServer === undefined) {
      const server = createServer((req, res) => {
        this.logRequests.push({ path: req.url ?? "", authorization: req.headers.authorization });
        const id = Number(/\/job-logs\/(\d+)/.exec(req.url ?? "")?.[1]);
        const run = this.checkRuns.get(id);
        res.writeHead(run === undefined ? 404 : 200, { "content-type": "text/plain" });
        res.end(run?.log ?? "");
      });
      // Every interface, so that \`localhost\` reaches it whichever address it resolves to first.
      const port = await new Promise<number>((resolve) => server.listen(0, () => resolve((server.address() as AddressInfo).port)));
      this.logServer = { server, port };
    }
    const slug = init.app ?? "github-actions";
    const suite = this.suiteOf(state.fullName, init.sha, slug);
    const id = this.newId();
    const json: Record<string, unknown> = {
      id,
      node_id: nodeId("CR", id),
      head_sha: init.sha,
      external_id: "",
      html_url: `${this.htmlBase}/${state.fullName}/runs/${id}`,
      details_url: `${this.htmlBase}/${state.fullName}/runs/${id}`,
      status: "completed",
      conclusion: init.conclusion,
      started_at: this.now(),
      completed_at: this.now(),
      output: { title: null, summary: null, text: null, annotations_count: 0 },
      name: init.name,
      check_suite: { id: suite },
      app: { id: 15368, slug, node_id: "MDM6QXBwMTUzNjg=", name: slug === "github-actions" ? "GitHub Actions" : slug },
      pull_requests: [],
    };
    this.checkRuns.set(id, { repo: state.fullName, json, log: init.log ?? "" });
    return clone(json);
  }

  private suiteOf(repo: string, sha: string, app: string): number {
    const lower = sha.toLowerCase();
    for (const [id, suite] of this.checkSuites) if (suite.repo === repo && suite.sha === lower && suite.app === app) return id;
    const id = this.newId();
    this.checkSuites.set(id, { repo, sha: lower, app, createdAt: this.now() });
    return id;
  }

  /** The runs of a repository that `keep` picks, newest first: only the latest of each name unless filter=all. */
  private runsWhere(state: RepoState, filter: string, keep: (run: Record<string, unknown>) => boolean): Record<string, unknown>[] {
    if (filter !== "latest" && filter !== "all") invalid("CheckRun", "filter");
    const runs = [...this.checkRuns.values()].filter((run) => run.repo === state.fullName && keep(run.json)).reverse();
    const names = runs.map((run) => String(run.json.name));
    return runs.filter((_run, index) => filter === "all" || names.indexOf(names[index] as string) === index).map((run) => clone(run.json));
  }

  /**
   * A `check_suite` `completed` delivery for the suite `run` belongs to, as GitHub sends it: the
   * suite's conclusion over its latest runs (a failure when any failed), listing `pulls` (a fork's: none).
   */
  checkSuitePayload(repo: string, run: Record<string, unknown>, pulls: readonly number[]): Record<string, unknown> {
    const state = this.repo(repo);
    const id = (run.check_suite as { id: number }).id;
    const suite = this.checkSuites.get(id);
    if (suite === undefined || suite.repo !== state.fullName) throw new Error(`no check suite ${String(id)} in ${repo}`);
    const runs = this.runsWhere(state, "latest", (one) => (one.check_suite as { id: number }).id === id);
    const conclusions = runs.map((one) => String(one.conclusion));
    const failing = conclusions.find((one) => one !== "success" && one !== "neutral" && one !== "skipped");
    const fromRun = this.checkRunPayload(repo, run, pulls);
    const branch = [...state.items.values()].find((item) => item.pr?.headSha === suite.sha)?.pr?.head ?? null;
    const check_suite = {
      id,
      node_id: nodeId("CS", id),
      head_branch: pulls.length > 0 ? branch : null,
      head_sha: suite.sha,
      status: "completed",
      conclusion: failing ?? "success",
      url: `${this.apiUrl}/repos/${state.fullName}/check-suites/${id}`,
      before: null,
      after: suite.sha,
      pull_requests: (fromRun.check_run as { pull_requests: unknown }).pull_requests,
      app: clone(run.app),
      created_at: suite.createdAt,
      updated_at: this.now(),
      rerequestable: true,
      runs_rerequestable: true,
      latest_check_runs_count: runs.length,
      check_runs_url: `${this.apiUrl}/repos/${state.fullName}/check-suites/${id}/check-runs`,
      head_commit: { id: suite.sha, message: "A commit", timestamp: suite.createdAt },
    };
    return { action: "completed", check_suite, repository: fromRun.repository, sender: fromRun.sender };
  }

  /**
   * A commit status on `sha` (what a CI outside GitHub Actions reports), as GitHub stores it; the
   * combined status of the commit is its latest per context.
   */
  addStatus(
    repo: string,
    init: { sha: string; context: string; state: "error" | "failure" | "pending" | "success"; targetUrl?: string; description?: string },
  ): Record<string, unknown> {
    const state = this.repo(repo);
    const id = this.newId();
    const json: Record<string, unknown> = {
      url: `${this.apiUrl}/repos/${state.fullName}/statuses/${init.sha}`,
      avatar_url: null,
      id,
      node_id: nodeId("SC", id),
      state: init.state,
      description: init.description ?? null,
      target_url: init.targetUrl ?? null,
      context: init.context,
      created_at: this.now(),
      updated_at: this.now(),
    };
    this.statuses.push({ repo: state.fullName, sha: init.sha.toLowerCase(), json });
    return clone(json);
  }

  /**
   * The pull requests GitHub lists on a check run: the open ones of the repository whose head is
   * the run's commit on a branch of the repository itself (a fork's is never listed).
   */
  private checkPullRefs(state: RepoState, sha: string): Record<string, unknown>[] {
    const repository = this.repoJson(state);
    return [...state.items.values()]
      .filter((item): item is ItemState & { pr: PullState } => item.pr !== undefined && item.state === "open")
      .filter((item) => item.pr.headSha === sha && item.pr.headRepo.toLowerCase() === state.fullName.toLowerCase())
      .map((item) => {
        const pull = this.pullJson(state, item);
        return {
          url: pull.url,
          id: pull.id,
          number: item.number,
          head: { ref: pull.head.ref, sha: pull.head.sha, repo: { id: pull.head.repo.id, url: pull.head.repo.url, name: pull.head.repo.name } },
          base: { ref: pull.base.ref, sha: pull.base.sha, repo: { id: repository.id, url: repository.url, name: repository.name } },
        };
      });
  }

  /** A `check_run` delivery for `run`, listing `pulls` as GitHub lists them (a fork's pull request: none). */
  checkRunPayload(repo: string, run: Record<string, unknown>, pulls: readonly number[]): Record<string, unknown> {
    const state = this.repo(repo);
    const repository = this.repoJson(state);
    const listed = pulls.map((number) => {
      const pull = this.pullJson(state, this.pullItem(state, number));
      return {
        url: pull.url,
        id: pull.id,
        number,
        head: { ref: pull.head.ref, sha: pull.head.sha, repo: { id: pull.head.repo.id, url: pull.head.repo.url, name: pull.head.repo.name } },
        base: { ref: pull.base.ref, sha: pull.base.sha, repo: { id: repository.id, url: repository.url, name: repository.name } },
      };
    });
    return { action: "completed", check_run: { ...clone(run), pull_requests: listed }, repository, sender: this.user("github-actions[bot]") };
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  // ---- clock -----------------------------------------------------------------------------------

  /** Moves the model's clock (timestamps, the Date header); rate-limit resets stay on real time. */
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }

  now(): string {
    return isoSeconds(Date.now() + this.offsetMs);
  }

  // ---- state model -----------------------------------------------------------------------------

  addRepo(fullName: string, options: { defaultBranch?: string; cloneUrl?: string } = {}): void {
    const [owner, name, ...rest] = fullName.split("/");
    if (!owner || !name || rest.length > 0) throw new Error(`a repository is owner/name, not ${fullName}`);
    const key = fullName.toLowerCase();
    if (this.repos.has(key)) throw new Error(`repository ${fullName} already exists`);
    this.repos.set(key, {
      id: this.foreignRepoIds.get(key) ?? this.newId(),
      fullName,
      owner,
      name,
      defaultBranch: options.defaultBranch ?? "main",
      cloneUrl: options.cloneUrl ?? `${this.htmlBase}/${fullName}.git`,
      nextNumber: 1,
      items: new Map(),
      labels: new Map(),
      collaborators: new Set(),
      comments: [],
      reviews: [],
      reviewComments: [],
      events: [],
    });
  }

  /** Makes `login` a collaborator, which shows in `author_association`. */
  addCollaborator(repo: string, login: string): void {
    this.repo(repo).collaborators.add(login);
  }

  addIssue(repo: string, init: { title: string; body?: string; user: string; labels?: string[] }): number {
    return this.createItem(this.repo(repo), init).number;
  }

  addPullRequest(
    repo: string,
    init: {
      title: string;
      body?: string;
      user: string;
      labels?: string[];
      head: string;
      headRepo?: string;
      base?: string;
      /** Default: a made-up sha; pass a real one when the-loop checks the head out. */
      headSha?: string;
    },
  ): number {
    const state = this.repo(repo);
    const item = this.createItem(state, init);
    item.pr = {
      head: init.head,
      headRepo: init.headRepo ?? state.fullName,
      base: init.base ?? state.defaultBranch,
      headSha: init.headSha ?? sha1(`${state.fullName}#${item.number}:${init.head}`),
      pullId: this.newId(),
      merged: false,
      mergedAt: null,
      mergedBy: null,
    };
    return item.number;
  }

  addComment(repo: string, number: number, init: { user: string; body: string }): FakeComment {
    return clone(this.createComment(this.repo(repo), number, init.user, init.body));
  }

  editComment(repo: string, id: number, body: string): FakeComment {
    const entry = this.repo(repo).comments.find((c) => c.json.id === id);
    if (!entry) throw new Error(`no comment ${id} in ${repo}`);
    entry.json.body = body;
    entry.json.updated_at = this.now();
    return clone(entry.json);
  }

  /** Returns the comment as it was, for a `deleted` payload. */
  deleteComment(repo: string, id: number): FakeComment {
    const state = this.repo(repo);
    const index = state.comments.findIndex((c) => c.json.id === id);
    const entry = state.comments[index];
    if (!entry) throw new Error(`no comment ${id} in ${repo}`);
    state.comments.splice(index, 1);
    return clone(entry.json);
  }

  addReview(repo: string, pr: number, init: { user: string; body: string; state?: ReviewState; commitId?: string }): FakeReview {
    const state = this.repo(repo);
    const item = this.pullItem(state, pr);
    const id = this.newId();
    const review: FakeReview = {
      id,
      node_id: nodeId("PRR", id),
      user: this.user(init.user),
      body: init.body,
      state: init.state ?? "COMMENTED",
      html_url: `${this.htmlBase}/${state.fullName}/pull/${pr}#pullrequestreview-${id}`,
      pull_request_url: `${this.apiUrl}/repos/${state.fullName}/pulls/${pr}`,
      commit_id: init.commitId ?? item.pr.headSha,
      author_association: this.association(state, init.user),
    };
    if (review.state !== "PENDING") {
      review.submitted_at = this.now();
      this.touch(item);
    }
    state.reviews.push({ number: pr, json: review });
    return clone(review);
  }

  addReviewComment(
    repo: string,
    pr: number,
    init: { user: string; body: string; path?: string; line?: number; reviewId?: number; inReplyTo?: number },
  ): FakeReviewComment {
    const state = this.repo(repo);
    const item = this.pullItem(state, pr);
    const id = this.newId();
    const now = this.now();
    const line = init.line ?? 1;
    const comment: FakeReviewComment = {
      id,
      node_id: nodeId("PRRC", id),
      url: `${this.apiUrl}/repos/${state.fullName}/pulls/comments/${id}`,
      pull_request_review_id: init.reviewId ?? null,
      diff_hunk: `@@ -${line},1 +${line},1 @@\n+changed line ${line}`,
      path: init.path ?? "README.md",
      line,
      original_line: line,
      side: "RIGHT",
      commit_id: item.pr.headSha,
      original_commit_id: item.pr.headSha,
      user: this.user(init.user),
      body: init.body,
      created_at: now,
      updated_at: now,
      html_url: `${this.htmlBase}/${state.fullName}/pull/${pr}#discussion_r${id}`,
      pull_request_url: `${this.apiUrl}/repos/${state.fullName}/pulls/${pr}`,
      author_association: this.association(state, init.user),
    };
    if (init.inReplyTo !== undefined) comment.in_reply_to_id = init.inReplyTo;
    state.reviewComments.push({ number: pr, json: comment });
    this.touch(item);
    return clone(comment);
  }

  /** The actor (recorded in issue events) defaults to the repository owner. */
  addLabel(repo: string, number: number, label: string, options: { actor?: string } = {}): void {
    const state = this.repo(repo);
    this.applyLabels(state, this.itemState(state, number), [label], options.actor ?? state.owner);
  }

  removeLabel(repo: string, number: number, label: string, options: { actor?: string } = {}): void {
    const state = this.repo(repo);
    if (!this.dropLabel(state, this.itemState(state, number), label, options.actor ?? state.owner)) {
      throw new Error(`${repo}#${number} has no label ${label}`);
    }
  }

  closeItem(repo: string, number: number, options: { merged?: boolean; actor?: string; stateReason?: "completed" | "not_planned" } = {}): void {
    const state = this.repo(repo);
    const item = this.itemState(state, number);
    const actor = options.actor ?? state.owner;
    if (options.merged) {
      if (!item.pr) throw new Error(`${repo}#${number} is an issue; only a pull request merges`);
      if (item.state === "closed") throw new Error(`${repo}#${number} is closed; a closed pull request cannot merge`);
      item.pr.merged = true;
      item.pr.mergedAt = this.now();
      item.pr.mergedBy = actor;
      this.recordEvent(state, item, "merged", actor);
    }
    this.setState(state, item, "closed", actor, options.stateReason);
  }

  reopenItem(repo: string, number: number, options: { actor?: string } = {}): void {
    const state = this.repo(repo);
    const item = this.itemState(state, number);
    if (item.pr?.merged) throw new Error(`${repo}#${number} is merged; GitHub cannot reopen it`);
    this.setState(state, item, "open", options.actor ?? state.owner);
  }

  /** The issue JSON as `GET /repos/{o}/{r}/issues/{n}` returns it (PRs included). */
  item(repo: string, number: number): FakeIssue {
    const state = this.repo(repo);
    return this.issueJson(state, this.itemState(state, number));
  }

  /** The pull JSON as `GET /repos/{o}/{r}/pulls/{n}` returns it. */
  pull(repo: string, number: number): FakePull {
    const state = this.repo(repo);
    return this.pullJson(state, this.pullItem(state, number));
  }

  repository(repo: string): FakeRepository {
    return this.repoJson(this.repo(repo));
  }

  /** Conversation comments, oldest first, including the ones the-loop posted. */
  comments(repo: string, number: number): FakeComment[] {
    const state = this.repo(repo);
    this.itemState(state, number);
    return state.comments.filter((c) => c.number === number).map((c) => clone(c.json));
  }

  reviews(repo: string, pr: number): FakeReview[] {
    return this.repo(repo)
      .reviews.filter((r) => r.number === pr)
      .map((r) => clone(r.json));
  }

  reviewComments(repo: string, pr: number): FakeReviewComment[] {
    return this.repo(repo)
      .reviewComments.filter((c) => c.number === pr)
      .map((c) => clone(c.json));
  }

  /** Label, close, reopen and merge events, oldest first. */
  events(repo: string, number?: number): IssueEventRecord[] {
    return this.repo(repo)
      .events.filter((e) => number === undefined || e.number === number)
      .map((e) => clone(e));
  }

  reactions(): FakeReaction[] {
    return this.reactionLog.map((r) => ({ ...r }));
  }

  // ---- scripting -------------------------------------------------------------------------------

  /**
   * A primary limit lasts until the whole second `x-ratelimit-reset` names (the reset rounded up),
   * so a client that sleeps until that header never wakes early; and at least `count` requests are
   * limited even when the reset has already passed, so a scripted limit is never missed.
   */
  rateLimitNext(script: RateLimitScript): void {
    const count = script.count ?? 1;
    if (script.secondary) {
      this.secondary = { remaining: count, retryAfter: script.retryAfterSeconds ?? script.resetInSeconds };
    } else {
      this.primary = { remaining: count, resetAtMs: this.ceilSecond(Date.now() + script.resetInSeconds * 1000) };
    }
  }

  failNext(status: number, count = 1): void {
    for (let i = 0; i < count; i++) this.failures.push(status);
  }

  /** Requests charged against the rate limit so far (304s, 401s, scripted failures and /rate_limit are free). */
  rateLimitUsed(): number {
    return this.charged;
  }

  /** What `x-ratelimit-remaining` would say now. */
  rateLimitRemaining(): number {
    return this.coreStatus().remaining;
  }

  /** Sets the current window, e.g. to see the-loop slow down when little is left. */
  setRateLimit(options: { remaining: number; resetInSeconds?: number }): void {
    this.windowUsed = Math.max(0, RATE_LIMIT - options.remaining);
    if (options.resetInSeconds !== undefined) {
      this.windowResetMs = this.ceilSecond(Date.now() + options.resetInSeconds * 1000);
    }
  }

  // ---- model internals -------------------------------------------------------------------------

  private newId(): number {
    return this.nextId++;
  }

  private ceilSecond(ms: number): number {
    return Math.ceil(ms / 1000) * 1000;
  }

  private repo(fullName: string): RepoState {
    const state = this.repos.get(fullName.toLowerCase());
    if (!state) throw new Error(`no repository ${fullName}; call addRepo first`);
    return state;
  }

  private itemState(state: RepoState, number: number): ItemState {
    const item = state.items.get(number);
    if (!item) throw new Error(`no issue or pull request ${state.fullName}#${number}`);
    return item;
  }

  private pullItem(state: RepoState, number: number): ItemState & { pr: PullState } {
    const item = this.itemState(state, number);
    if (!item.pr) throw new Error(`${state.fullName}#${number} is an issue, not a pull request`);
    return item as ItemState & { pr: PullState };
  }

  private touch(item: ItemState): void {
    item.updatedAt = this.now();
  }

  private createItem(state: RepoState, init: { title: string; body?: string; user: string; labels?: string[] }): ItemState {
    const now = this.now();
    const item: ItemState = {
      number: state.nextNumber++,
      id: this.newId(),
      title: init.title,
      body: init.body ?? null,
      user: init.user,
      labels: [],
      state: "open",
      stateReason: null,
      createdAt: now,
      updatedAt: now,
      closedAt: null,
    };
    state.items.set(item.number, item);
    // Labels given at creation show up as `labeled` events by the author, as they do on GitHub.
    this.applyLabels(state, item, init.labels ?? [], init.user);
    return item;
  }

  private createComment(state: RepoState, number: number, login: string, body: string): FakeComment {
    const item = this.itemState(state, number);
    const id = this.newId();
    const now = this.now();
    const comment: FakeComment = {
      id,
      node_id: nodeId("IC", id),
      url: `${this.apiUrl}/repos/${state.fullName}/issues/comments/${id}`,
      html_url: `${this.itemHtmlUrl(state, item)}#issuecomment-${id}`,
      issue_url: `${this.apiUrl}/repos/${state.fullName}/issues/${number}`,
      body,
      user: this.user(login),
      created_at: now,
      updated_at: now,
      author_association: this.association(state, login),
    };
    state.comments.push({ number, json: comment });
    this.touch(item);
    return comment;
  }

  private labelFor(state: RepoState, name: string): { id: number; name: string } {
    const key = name.toLowerCase();
    let label = state.labels.get(key);
    if (!label) {
      label = { id: this.newId(), name };
      state.labels.set(key, label);
    }
    return label;
  }

  /** Returns whether anything changed; labels are case-insensitive and keep their first spelling. */
  private applyLabels(state: RepoState, item: ItemState, names: readonly string[], actor: string): boolean {
    let changed = false;
    for (const raw of names) {
      const name = this.labelFor(state, raw).name;
      if (item.labels.some((l) => l.toLowerCase() === name.toLowerCase())) continue;
      item.labels.push(name);
      this.recordEvent(state, item, "labeled", actor, name);
      changed = true;
    }
    if (changed) this.touch(item);
    return changed;
  }

  private dropLabel(state: RepoState, item: ItemState, name: string, actor: string): boolean {
    const index = item.labels.findIndex((l) => l.toLowerCase() === name.toLowerCase());
    const existing = item.labels[index];
    if (existing === undefined) return false;
    item.labels.splice(index, 1);
    this.recordEvent(state, item, "unlabeled", actor, existing);
    this.touch(item);
    return true;
  }

  private setState(state: RepoState, item: ItemState, to: "open" | "closed", actor: string, reason?: "completed" | "not_planned"): void {
    if (item.state === to) return;
    item.state = to;
    if (to === "closed") {
      item.closedAt = this.now();
      item.stateReason = item.pr ? null : (reason ?? "completed");
    } else {
      item.closedAt = null;
      item.stateReason = item.pr ? null : "reopened";
    }
    this.recordEvent(state, item, to === "closed" ? "closed" : "reopened", actor);
    this.touch(item);
  }

  private recordEvent(state: RepoState, item: ItemState, event: IssueEventRecord["event"], actor: string, label?: string): void {
    const record: IssueEventRecord = { id: this.newId(), number: item.number, event, actor, created_at: this.now() };
    if (label !== undefined) record.label = label;
    state.events.push(record);
  }

  private association(state: RepoState, login: string): string {
    if (login.toLowerCase() === state.owner.toLowerCase()) return "OWNER";
    if (state.collaborators.has(login)) return "COLLABORATOR";
    return "NONE";
  }

  // ---- JSON shapes -----------------------------------------------------------------------------

  private user(login: string): FakeUser {
    let id = this.users.get(login);
    if (id === undefined) {
      id = this.newId();
      this.users.set(login, id);
    }
    return {
      login,
      id,
      node_id: nodeId("U", id),
      type: login.endsWith("[bot]") ? "Bot" : "User",
      html_url: `${this.htmlBase}/${login}`,
      site_admin: false,
    };
  }

  private repoJson(state: RepoState): FakeRepository {
    return {
      id: state.id,
      node_id: nodeId("R", state.id),
      name: state.name,
      full_name: state.fullName,
      owner: this.user(state.owner),
      private: false,
      html_url: `${this.htmlBase}/${state.fullName}`,
      url: `${this.apiUrl}/repos/${state.fullName}`,
      clone_url: state.cloneUrl,
      default_branch: state.defaultBranch,
      fork: false,
      archived: false,
      visibility: "public",
    };
  }

  /** A head repository the test never added (a fork): made up, but stable. */
  private anyRepoJson(fullName: string): FakeRepository {
    const known = this.repos.get(fullName.toLowerCase());
    if (known) return this.repoJson(known);
    let id = this.foreignRepoIds.get(fullName.toLowerCase());
    if (id === undefined) {
      id = this.newId();
      this.foreignRepoIds.set(fullName.toLowerCase(), id);
    }
    const [owner = fullName, name = fullName] = fullName.split("/");
    return {
      id,
      node_id: nodeId("R", id),
      name,
      full_name: fullName,
      owner: this.user(owner),
      private: false,
      html_url: `${this.htmlBase}/${fullName}`,
      url: `${this.apiUrl}/repos/${fullName}`,
      clone_url: `${this.htmlBase}/${fullName}.git`,
      default_branch: "main",
      fork: true,
      archived: false,
      visibility: "public",
    };
  }

  private labelJson(state: RepoState, name: string): FakeLabel {
    const label = this.labelFor(state, name);
    return {
      id: label.id,
      node_id: nodeId("LA", label.id),
      url: `${this.apiUrl}/repos/${state.fullName}/labels/${encodeURIComponent(label.name)}`,
      name: label.name,
      color: sha1(label.name.toLowerCase()).slice(0, 6),
      default: false,
      description: null,
    };
  }

  private itemHtmlUrl(state: RepoState, item: ItemState): string {
    return `${this.htmlBase}/${state.fullName}/${item.pr ? "pull" : "issues"}/${item.number}`;
  }

  private issueJson(state: RepoState, item: ItemState): FakeIssue {
    const api = `${this.apiUrl}/repos/${state.fullName}/issues/${item.number}`;
    const json: FakeIssue = {
      url: api,
      repository_url: `${this.apiUrl}/repos/${state.fullName}`,
      labels_url: `${api}/labels{/name}`,
      comments_url: `${api}/comments`,
      events_url: `${api}/events`,
      html_url: this.itemHtmlUrl(state, item),
      id: item.id,
      node_id: nodeId("I", item.id),
      number: item.number,
      title: item.title,
      body: item.body,
      user: this.user(item.user),
      labels: item.labels.map((name) => this.labelJson(state, name)),
      state: item.state,
      state_reason: item.stateReason,
      locked: false,
      assignee: null,
      assignees: [],
      milestone: null,
      comments: state.comments.filter((c) => c.number === item.number).length,
      created_at: item.createdAt,
      updated_at: item.updatedAt,
      closed_at: item.closedAt,
      author_association: this.association(state, item.user),
    };
    if (item.pr) {
      const pulls = `${this.apiUrl}/repos/${state.fullName}/pulls/${item.number}`;
      const html = this.itemHtmlUrl(state, item);
      json.draft = false;
      json.pull_request = {
        url: pulls,
        html_url: html,
        diff_url: `${html}.diff`,
        patch_url: `${html}.patch`,
        merged_at: item.pr.mergedAt,
      };
    }
    return json;
  }

  private pullJson(state: RepoState, item: ItemState & { pr: PullState }): FakePull {
    const pr = item.pr;
    const api = `${this.apiUrl}/repos/${state.fullName}`;
    const html = this.itemHtmlUrl(state, item);
    const headRepo = this.anyRepoJson(pr.headRepo);
    const baseRepo = this.repoJson(state);
    return {
      url: `${api}/pulls/${item.number}`,
      id: pr.pullId,
      node_id: nodeId("PR", pr.pullId),
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: `${api}/issues/${item.number}`,
      comments_url: `${api}/issues/${item.number}/comments`,
      review_comments_url: `${api}/pulls/${item.number}/comments`,
      number: item.number,
      state: item.state,
      locked: false,
      title: item.title,
      body: item.body,
      user: this.user(item.user),
      labels: item.labels.map((name) => this.labelJson(state, name)),
      created_at: item.createdAt,
      updated_at: item.updatedAt,
      closed_at: item.closedAt,
      merged_at: pr.mergedAt,
      merge_commit_sha: pr.merged ? sha1(`merge:${pr.headSha}`) : null,
      draft: false,
      head: {
        label: `${headRepo.owner.login}:${pr.head}`,
        ref: pr.head,
        sha: pr.headSha,
        user: headRepo.owner,
        repo: headRepo,
      },
      base: {
        label: `${baseRepo.owner.login}:${pr.base}`,
        ref: pr.base,
        sha: sha1(`${state.fullName}:${pr.base}`),
        user: baseRepo.owner,
        repo: baseRepo,
      },
      author_association: this.association(state, item.user),
      merged: pr.merged,
      mergeable: item.state === "open" ? true : null,
      merged_by: pr.mergedBy === null ? null : this.user(pr.mergedBy),
      comments: state.comments.filter((c) => c.number === item.number).length,
      review_comments: state.reviewComments.filter((c) => c.number === item.number).length,
      commits: 1,
      additions: 1,
      deletions: 0,
      changed_files: 1,
    };
  }

  private eventJson(state: RepoState, event: IssueEventRecord, withIssue: boolean): Record<string, unknown> {
    const json: Record<string, unknown> = {
      id: event.id,
      node_id: nodeId("E", event.id),
      url: `${this.apiUrl}/repos/${state.fullName}/issues/events/${event.id}`,
      actor: this.user(event.actor),
      event: event.event,
      commit_id: null,
      commit_url: null,
      created_at: event.created_at,
    };
    if (event.label !== undefined) {
      const label = this.labelJson(state, event.label);
      json.label = { name: label.name, color: label.color };
    }
    if (withIssue) json.issue = this.issueJson(state, this.itemState(state, event.number));
    return json;
  }

  private payloads(): FakePayloads {
    const labelOf = (state: RepoState, action: string, label: string | undefined): FakeLabel | undefined => {
      if (action !== "labeled" && action !== "unlabeled") return undefined;
      if (label === undefined) throw new Error(`a ${action} payload needs the label`);
      return this.labelJson(state, label);
    };
    return {
      issues: (repo, number, action, sender, label) => {
        const state = this.repo(repo);
        const payload: IssuesPayload = {
          action,
          issue: this.issueJson(state, this.itemState(state, number)),
          repository: this.repoJson(state),
          sender: this.user(sender),
        };
        const labelJson = labelOf(state, action, label);
        if (labelJson) payload.label = labelJson;
        if (action === "edited") payload.changes = {};
        return payload;
      },
      issueComment: (repo, number, comment, action = "created") => {
        const state = this.repo(repo);
        const payload: IssueCommentPayload = {
          action,
          issue: this.issueJson(state, this.itemState(state, number)),
          comment: clone(comment),
          repository: this.repoJson(state),
          sender: clone(comment.user),
        };
        if (action === "edited") payload.changes = {};
        return payload;
      },
      pullRequest: (repo, number, action, sender, label) => {
        const state = this.repo(repo);
        const payload: PullRequestPayload = {
          action,
          number,
          pull_request: this.pullJson(state, this.pullItem(state, number)),
          repository: this.repoJson(state),
          sender: this.user(sender),
        };
        const labelJson = labelOf(state, action, label);
        if (labelJson) payload.label = labelJson;
        return payload;
      },
      pullRequestReview: (repo, pr, review, action = "submitted") => {
        const state = this.repo(repo);
        return {
          action,
          review: clone(review),
          pull_request: this.pullJson(state, this.pullItem(state, pr)),
          repository: this.repoJson(state),
          sender: clone(review.user),
        };
      },
      pullRequestReviewComment: (repo, pr, comment, action = "created") => {
        const state = this.repo(repo);
        return {
          action,
          comment: clone(comment),
          pull_request: this.pullJson(state, this.pullItem(state, pr)),
          repository: this.repoJson(state),
          sender: clone(comment.user),
        };
      },
    };
  }

  // ---- rate limit ------------------------------------------------------------------------------

  private roll(): void {
    const now = Date.now();
    if (this.primary && this.primary.remaining <= 0 && now >= this.primary.resetAtMs) {
      this.primary = undefined;
      this.windowUsed = 0;
      this.windowResetMs = this.ceilSecond(now + RATE_WINDOW_SECONDS * 1000);
    }
    if (now >= this.windowResetMs) {
      this.windowUsed = 0;
      this.windowResetMs = this.ceilSecond(now + RATE_WINDOW_SECONDS * 1000);
    }
  }

  private coreStatus(): { limit: number; remaining: number; used: number; reset: number; limited: boolean } {
    this.roll();
    if (this.primary) {
      return { limit: RATE_LIMIT, remaining: 0, used: RATE_LIMIT, reset: this.primary.resetAtMs / 1000, limited: true };
    }
    const remaining = Math.max(0, RATE_LIMIT - this.windowUsed);
    return {
      limit: RATE_LIMIT,
      remaining,
      used: RATE_LIMIT - remaining,
      reset: this.windowResetMs / 1000,
      limited: remaining === 0,
    };
  }

  private rateHeaders(): Record<string, string> {
    const core = this.coreStatus();
    return {
      "x-ratelimit-limit": String(core.limit),
      "x-ratelimit-remaining": String(core.remaining),
      "x-ratelimit-used": String(core.used),
      "x-ratelimit-reset": String(core.reset),
      "x-ratelimit-resource": "core",
    };
  }

  /** A scripted or natural limit for this request, if any; consumes one scripted hit. */
  private limitFor(): Reply | undefined {
    const core = this.coreStatus();
    if (core.limited) {
      if (this.primary && this.primary.remaining > 0) this.primary.remaining--;
      return {
        status: 403,
        body: {
          message: "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.",
          documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api`,
        },
      };
    }
    if (this.secondary && this.secondary.remaining > 0) {
      this.secondary.remaining--;
      const retryAfter = this.secondary.retryAfter;
      if (this.secondary.remaining === 0) this.secondary = undefined;
      return {
        status: 403,
        headers: { "retry-after": String(retryAfter) },
        body: {
          message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
          documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits`,
        },
      };
    }
    return undefined;
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    const method = (req.method ?? "GET").toUpperCase();
    const url = new URL(req.url ?? "/", this.htmlBase);
    let rawPath = url.pathname;
    if (rawPath === "/api/v3" || rawPath.startsWith("/api/v3/")) rawPath = rawPath.slice("/api/v3".length);
    const rawSegments = rawPath.split("/").filter((s) => s.length > 0);
    rawPath = `/${rawSegments.join("/")}`;
    const segments = rawSegments.map(safeDecode);
    const path = `/${segments.join("/")}`;
    const exempt = method === "GET" && path === "/rate_limit";
    const presented = /^(?:token|bearer)\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
    const authorized = this.token === undefined ? presented !== undefined : presented === this.token;
    const ifNoneMatch = req.headers["if-none-match"];

    let reply: Reply;
    let charge = false;
    if (this.token !== undefined && !authorized) {
      reply = { status: 401, body: { message: "Bad credentials", documentation_url: DOCS } };
    } else if (!exempt && this.failures.length > 0) {
      const status = this.failures.shift() as number;
      reply = { status, body: { message: `Injected failure ${status}` } };
    } else {
      const limited = exempt ? undefined : this.limitFor();
      if (limited) {
        reply = limited;
      } else {
        charge = !exempt;
        reply = this.route({ method, rawPath, params: url.searchParams, body: undefined }, segments, text, presented);
      }
    }

    const headers: Record<string, string> = {
      "content-type": "application/json; charset=utf-8",
      "x-github-media-type": "github.v3; format=json",
      "x-github-request-id": randomUUID().toUpperCase(),
      date: new Date(Date.now() + this.offsetMs).toUTCString(),
      ...reply.headers,
    };
    if (this.pollInterval !== undefined) headers["x-poll-interval"] = String(this.pollInterval);
    let body = reply.body === undefined ? "" : JSON.stringify(reply.body);
    let status = reply.status;
    if (method === "GET" && status === 200) {
      const etag = `W/"${sha1(body)}"`;
      headers.etag = etag;
      headers["cache-control"] = "private, max-age=60, s-maxage=60";
      headers.vary = "Accept, Authorization, Cookie, X-GitHub-OTP";
      if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, etag)) {
        // GitHub does not charge a 304 against the rate limit; that is the point of sending ETags.
        status = 304;
        body = "";
        charge = false;
      }
    }
    if (charge) {
      this.charged++;
      this.windowUsed++;
    }
    Object.assign(headers, this.rateHeaders());
    if (status === 304 || status === 204) delete headers["content-type"];

    const entry: RequestLogEntry = {
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      status,
      authorized,
      at: Date.now(),
    };
    if (ifNoneMatch !== undefined) entry.ifNoneMatch = ifNoneMatch;
    this.requests.push(entry);

    res.writeHead(status, headers);
    res.end(status === 304 || status === 204 ? undefined : body);
  }

  private route(ctx: Context, segments: string[], text: string, presented: string | undefined): Reply {
    try {
      if (ctx.method !== "GET" && ctx.method !== "DELETE" && text.trim().length > 0) {
        try {
          ctx.body = JSON.parse(text);
        } catch {
          throw new HttpError(400, "Problems parsing JSON");
        }
      }
      if (ctx.method === "GET" && segments.length === 1 && segments[0] === "user") {
        if (presented === undefined) throw new HttpError(401, "Requires authentication");
        if (this.userFailure !== undefined)
          throw new HttpError(this.userFailure, this.userFailure === 403 ? "Resource not accessible by integration" : `Injected failure ${this.userFailure}`);
        return { status: 200, body: this.user(this.botLogin) };
      }
      for (const route of this.routes) {
        if (route.method !== ctx.method) continue;
        const args = matchRoute(route.pattern, segments);
        if (args) return route.handler(ctx, args);
      }
      return notFound();
    } catch (error) {
      if (error instanceof HttpError) {
        return { status: error.status, body: { message: error.message, ...error.extra, documentation_url: DOCS } };
      }
      // A broken handler must cost one request, never the server.
      return { status: 500, body: { message: `fake GitHub handler failed: ${String(error)}` } };
    }
  }

  private on(method: string, pattern: string, handler: Handler): void {
    this.routes.push({ method, pattern: pattern.split("/").filter((s) => s.length > 0), handler });
  }

  private routeRepo(owner: string | undefined, name: string | undefined): RepoState {
    const state = this.repos.get(`${owner ?? ""}/${name ?? ""}`.toLowerCase());
    return state ?? notFound();
  }

  private routeItem(state: RepoState, number: string | undefined): ItemState {
    return state.items.get(Number(number)) ?? notFound();
  }

  /** The commit a `{ref}` names: a sha as it is, a branch by the head of an open pull request on it. */
  private commitOf(state: RepoState, ref: string): string {
    if (/^[0-9a-f]{40}$/i.test(ref)) return ref.toLowerCase();
    const pull = [...state.items.values()].find((item) => item.pr !== undefined && item.pr.head === ref);
    if (pull?.pr === undefined) notFound();
    return pull.pr.headSha;
  }

  private page<T>(ctx: Context, items: T[]): Reply {
    const perPageRaw = Number.parseInt(ctx.params.get("per_page") ?? "", 10);
    const perPage = Number.isFinite(perPageRaw) && perPageRaw > 0 ? Math.min(perPageRaw, 100) : 30;
    const pageRaw = Number.parseInt(ctx.params.get("page") ?? "", 10);
    const page = Number.isFinite(pageRaw) && pageRaw > 0 ? pageRaw : 1;
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const link = (to: number, rel: string): string => {
      const params = new URLSearchParams(ctx.params);
      params.set("page", String(to));
      return `<${this.apiUrl}${ctx.rawPath}?${params.toString()}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page > 1) links.push(link(Math.min(page - 1, last), "prev"));
    if (page < last) links.push(link(page + 1, "next"), link(last, "last"));
    if (page > 1) links.push(link(1, "first"));
    const reply: Reply = { status: 200, body: items.slice((page - 1) * perPage, page * perPage) };
    if (links.length > 0) reply.headers = { link: links.join(", ") };
    return reply;
  }

  private sinceFilter(ctx: Context): (updatedAt: string) => boolean {
    const since = ctx.params.get("since");
    if (since === null) return () => true;
    const at = Date.parse(since);
    if (Number.isNaN(at)) invalid("Issue", "since");
    return (updatedAt) => Date.parse(updatedAt) >= at;
  }

  private direction(ctx: Context, fallback: "asc" | "desc"): "asc" | "desc" {
    const value = ctx.params.get("direction") ?? fallback;
    if (value !== "asc" && value !== "desc") invalid("Issue", "direction");
    return value;
  }

  private sortKey(ctx: Context, allowed: readonly string[]): string {
    const value = ctx.params.get("sort") ?? "created";
    if (!allowed.includes(value)) invalid("Issue", "sort");
    return value;
  }

  private react(subject: FakeReaction["subject"], state: RepoState, id: number, body: unknown): Reply {
    const content = (body as { content?: unknown } | undefined)?.content;
    if (typeof content !== "string" || !REACTIONS.has(content)) invalid("Reaction", "content");
    const existing = this.reactionLog.find(
      (r) => r.subject === subject && r.repo === state.fullName && r.id === id && r.content === content && r.user === this.botLogin,
    );
    const reaction = existing ?? { subject, repo: state.fullName, id, content, user: this.botLogin };
    if (!existing) {
      this.reactionLog.push(reaction);
      this.reactionIds.set(reaction, this.newId());
    }
    const reactionId = this.reactionIds.get(reaction) as number;
    // GitHub answers 200 for a reaction that already exists and 201 for a new one.
    return {
      status: existing ? 200 : 201,
      body: {
        id: reactionId,
        node_id: nodeId("REA", reactionId),
        user: this.user(this.botLogin),
        content,
        created_at: this.now(),
      },
    };
  }

  private defineRoutes(): void {
    const R = "/repos/:o/:r";

    this.on("GET", "/rate_limit", () => {
      const { limited: _limited, ...core } = this.coreStatus();
      const resource = { ...core, resource: "core" };
      return { status: 200, body: { resources: { core: resource }, rate: resource } };
    });

    this.on("GET", R, (_ctx, [o, r]) => ({ status: 200, body: this.repoJson(this.routeRepo(o, r)) }));

    this.on("GET", `${R}/issues`, (ctx, [o, r]) => {
      const state = this.routeRepo(o, r);
      const wanted = ctx.params.get("state") ?? "open";
      if (wanted !== "open" && wanted !== "closed" && wanted !== "all") invalid("Issue", "state");
      const labels = (ctx.params.get("labels") ?? "")
        .split(",")
        .map((l) => l.trim().toLowerCase())
        .filter((l) => l.length > 0);
      const creator = ctx.params.get("creator");
      const since = this.sinceFilter(ctx);
      const sort = this.sortKey(ctx, ["created", "updated", "comments"]);
      const direction = this.direction(ctx, "desc");
      const matching = [...state.items.values()].filter(
        (item) =>
          (wanted === "all" || item.state === wanted) &&
          labels.every((l) => item.labels.some((have) => have.toLowerCase() === l)) &&
          (creator === null || item.user.toLowerCase() === creator.toLowerCase()) &&
          since(item.updatedAt),
      );
      const json = matching.map((item) => this.issueJson(state, item));
      const sorted =
        sort === "comments"
          ? [...json].sort((a, b) => (direction === "asc" ? 1 : -1) * (a.comments - b.comments || a.number - b.number))
          : byTime(
              json,
              (i) => (sort === "updated" ? i.updated_at : i.created_at),
              (i) => i.number,
              direction,
            );
      return this.page(ctx, sorted);
    });

    this.on("GET", `${R}/issues/comments`, (ctx, [o, r]) => {
      const state = this.routeRepo(o, r);
      const since = this.sinceFilter(ctx);
      const sort = this.sortKey(ctx, ["created", "updated"]);
      const direction = this.direction(ctx, "asc");
      const json = state.comments.map((c) => c.json).filter((c) => since(c.updated_at));
      return this.page(
        ctx,
        clone(
          byTime(
            json,
            (c) => (sort === "updated" ? c.updated_at : c.created_at),
            (c) => c.id,
            direction,
          ),
        ),
      );
    });

    this.on("GET", `${R}/issues/comments/:n`, (_ctx, [o, r, id]) => {
      const found = this.routeRepo(o, r).comments.find((c) => c.json.id === Number(id));
      return { status: 200, body: clone(found?.json ?? notFound()) };
    });

    this.on("PATCH", `${R}/issues/comments/:n`, (ctx, [o, r, id]) => {
      const state = this.routeRepo(o, r);
      const body = (ctx.body as { body?: unknown } | undefined)?.body;
      if (typeof body !== "string") invalid("IssueComment", "body", "missing_field");
      if (!state.comments.some((c) => c.json.id === Number(id))) notFound();
      return { status: 200, body: this.editComment(state.fullName, Number(id), body) };
    });

    this.on("POST", `${R}/issues/comments/:n/reactions`, (ctx, [o, r, id]) => {
      const state = this.routeRepo(o, r);
      if (!state.comments.some((c) => c.json.id === Number(id))) notFound();
      return this.react("issue_comment", state, Number(id), ctx.body);
    });

    this.on("GET", `${R}/issues/events`, (ctx, [o, r]) => {
      const state = this.routeRepo(o, r);
      const events = [...state.events].reverse().map((e) => this.eventJson(state, e, true));
      return this.page(ctx, events);
    });

    this.on("GET", `${R}/issues/:n`, (_ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      return { status: 200, body: this.issueJson(state, this.routeItem(state, n)) };
    });

    this.on("PATCH", `${R}/issues/:n`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      const patch = (ctx.body ?? {}) as { title?: unknown; body?: unknown; state?: unknown; state_reason?: unknown };
      if (typeof patch.title === "string") item.title = patch.title;
      if (typeof patch.body === "string" || patch.body === null) item.body = patch.body;
      if (patch.title !== undefined || patch.body !== undefined) this.touch(item);
      if (patch.state === "closed" || patch.state === "open") {
        if (patch.state === "open" && item.pr?.merged) invalid("PullRequest", "state");
        const reason = patch.state_reason === "not_planned" ? "not_planned" : undefined;
        this.setState(state, item, patch.state, this.botLogin, reason);
      } else if (patch.state !== undefined) {
        invalid("Issue", "state");
      }
      return { status: 200, body: this.issueJson(state, item) };
    });

    this.on("GET", `${R}/issues/:n/comments`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      const since = this.sinceFilter(ctx);
      const json = state.comments.filter((c) => c.number === item.number && since(c.json.updated_at)).map((c) => c.json);
      return this.page(ctx, clone(json));
    });

    this.on("POST", `${R}/issues/:n/comments`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      const body = (ctx.body as { body?: unknown } | undefined)?.body;
      if (typeof body !== "string" || body.length === 0) invalid("IssueComment", "body", "missing_field");
      return { status: 201, body: clone(this.createComment(state, item.number, this.botLogin, body)) };
    });

    this.on("GET", `${R}/issues/:n/events`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      const events = state.events.filter((e) => e.number === item.number).map((e) => this.eventJson(state, e, false));
      return this.page(ctx, events);
    });

    this.on("GET", `${R}/issues/:n/labels`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      return this.page(
        ctx,
        item.labels.map((name) => this.labelJson(state, name)),
      );
    });

    this.on("POST", `${R}/issues/:n/labels`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      // GitHub takes either {"labels": [...]} or a bare array.
      const labels = Array.isArray(ctx.body) ? ctx.body : (ctx.body as { labels?: unknown } | undefined)?.labels;
      if (!Array.isArray(labels) || !labels.every((l): l is string => typeof l === "string" && l.length > 0)) {
        invalid("Label", "labels");
      }
      this.applyLabels(state, item, labels, this.botLogin);
      return { status: 200, body: item.labels.map((name) => this.labelJson(state, name)) };
    });

    this.on("DELETE", `${R}/issues/:n/labels/:name`, (_ctx, [o, r, n, name]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      if (!this.dropLabel(state, item, name ?? "", this.botLogin)) throw new HttpError(404, "Label does not exist");
      return { status: 200, body: item.labels.map((label) => this.labelJson(state, label)) };
    });

    this.on("POST", `${R}/issues/:n/reactions`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      return this.react("issue", state, item.number, ctx.body);
    });

    this.on("GET", `${R}/pulls`, (ctx, [o, r]) => {
      const state = this.routeRepo(o, r);
      const wanted = ctx.params.get("state") ?? "open";
      if (wanted !== "open" && wanted !== "closed" && wanted !== "all") invalid("PullRequest", "state");
      const head = ctx.params.get("head");
      const base = ctx.params.get("base");
      const sort = this.sortKey(ctx, ["created", "updated"]);
      const direction = this.direction(ctx, "desc");
      const pulls = [...state.items.values()]
        .filter((item): item is ItemState & { pr: PullState } => item.pr !== undefined)
        .filter((item) => wanted === "all" || item.state === wanted)
        .map((item) => this.pullJson(state, item))
        .filter((p) => (head === null || p.head.label === head) && (base === null || p.base.ref === base));
      return this.page(
        ctx,
        byTime(
          pulls,
          (p) => (sort === "updated" ? p.updated_at : p.created_at),
          (p) => p.number,
          direction,
        ),
      );
    });

    this.on("GET", `${R}/pulls/comments`, (ctx, [o, r]) => {
      const state = this.routeRepo(o, r);
      const since = this.sinceFilter(ctx);
      const sort = this.sortKey(ctx, ["created", "updated"]);
      const direction = this.direction(ctx, "asc");
      const json = state.reviewComments.map((c) => c.json).filter((c) => since(c.updated_at));
      return this.page(
        ctx,
        clone(
          byTime(
            json,
            (c) => (sort === "updated" ? c.updated_at : c.created_at),
            (c) => c.id,
            direction,
          ),
        ),
      );
    });

    this.on("GET", `${R}/pulls/comments/:n`, (_ctx, [o, r, id]) => {
      const found = this.routeRepo(o, r).reviewComments.find((c) => c.json.id === Number(id));
      return { status: 200, body: clone(found?.json ?? notFound()) };
    });

    this.on("POST", `${R}/pulls/comments/:n/reactions`, (ctx, [o, r, id]) => {
      const state = this.routeRepo(o, r);
      if (!state.reviewComments.some((c) => c.json.id === Number(id))) notFound();
      return this.react("review_comment", state, Number(id), ctx.body);
    });

    // The check runs of a commit (GET /repos/{owner}/{repo}/commits/{ref}/check-runs): the latest
    // run of each name unless filter=all, newest first, in an object that counts them.
    this.on("GET", `${R}/commits/:ref/check-runs`, (ctx, [o, r, ref]) => {
      const state = this.routeRepo(o, r);
      const sha = this.commitOf(state, ref ?? "");
      const kept = this.runsWhere(state, ctx.params.get("filter") ?? "latest", (run) => run.head_sha === sha);
      const pulls = this.checkPullRefs(state, sha);
      const all = kept.map((run) => ({ ...run, pull_requests: clone(pulls) }));
      const reply = this.page(ctx, all);
      return { ...reply, body: { total_count: all.length, check_runs: reply.body } };
    });

    // The check runs of a suite (GET /repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs):
    // as a commit's, the latest of each name unless filter=all, in an object that counts them.
    this.on("GET", `${R}/check-suites/:n/check-runs`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const suite = this.checkSuites.get(Number(n));
      if (suite === undefined || suite.repo !== state.fullName) notFound();
      const runs = this.runsWhere(state, ctx.params.get("filter") ?? "latest", (run) => (run.check_suite as { id: number }).id === Number(n));
      const pulls = this.checkPullRefs(state, suite.sha);
      const all = runs.map((run) => ({ ...run, pull_requests: clone(pulls) }));
      const reply = this.page(ctx, all);
      return { ...reply, body: { total_count: all.length, check_runs: reply.body } };
    });

    // The combined status of a commit: its latest status per context, and one state over them.
    this.on("GET", `${R}/commits/:ref/status`, (ctx, [o, r, ref]) => {
      const state = this.routeRepo(o, r);
      const sha = this.commitOf(state, ref ?? "");
      const latest = new Map<string, Record<string, unknown>>();
      for (const entry of this.statuses) if (entry.repo === state.fullName && entry.sha === sha) latest.set(String(entry.json.context), entry.json);
      const statuses = [...latest.values()].reverse();
      const states = statuses.map((entry) => entry.state);
      const combined = states.some((one) => one === "error" || one === "failure")
        ? "failure"
        : states.length === 0 || states.includes("pending")
          ? "pending"
          : "success";
      const reply = this.page(ctx, clone(statuses));
      return {
        ...reply,
        body: {
          state: combined,
          statuses: reply.body,
          sha,
          total_count: statuses.length,
          repository: this.repoJson(state),
          commit_url: `${this.apiUrl}/repos/${state.fullName}/commits/${sha}`,
          url: `${this.apiUrl}/repos/${state.fullName}/commits/${sha}/status`,
        },
      };
    });

    this.on("GET", `${R}/actions/jobs/:n/logs`, (_ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const run = this.checkRuns.get(Number(n));
      if (run === undefined || run.repo !== state.fullName || this.logServer === undefined) notFound();
      return { status: 302, headers: { location: `http://localhost:${this.logServer.port}/job-logs/${n}?sig=short-lived` } };
    });

    this.on("GET", `${R}/pulls/:n`, (_ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      if (!item.pr) notFound();
      return { status: 200, body: this.pullJson(state, item as ItemState & { pr: PullState }) };
    });

    this.on("GET", `${R}/pulls/:n/comments`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      if (!item.pr) notFound();
      const since = this.sinceFilter(ctx);
      const json = state.reviewComments.filter((c) => c.number === item.number && since(c.json.updated_at)).map((c) => c.json);
      return this.page(ctx, clone(json));
    });

    this.on("GET", `${R}/pulls/:n/reviews`, (ctx, [o, r, n]) => {
      const state = this.routeRepo(o, r);
      const item = this.routeItem(state, n);
      if (!item.pr) notFound();
      // A pending review is visible to its author only, as on GitHub.
      const json = state.reviews
        .filter((rv) => rv.number === item.number && (rv.json.state !== "PENDING" || rv.json.user.login === this.botLogin))
        .map((rv) => rv.json);
      return this.page(ctx, clone(json));
    });
  }
}

export interface WebhookDelivery {
  event: string;
  payload: unknown;
  secret?: string;
  /** Default: a random uuid. */
  deliveryId?: string;
  /** Sent instead of the computed signature, e.g. a bad one. */
  signature?: string;
  /** Sent instead of JSON.stringify(payload); signed as sent. */
  body?: string;
}

/** POSTs a delivery the way GitHub's webhook sender does. */
export async function sendWebhook(url: string, delivery: WebhookDelivery): Promise<{ status: number; body: string; deliveryId: string }> {
  const deliveryId = delivery.deliveryId ?? randomUUID();
  const body = delivery.body ?? JSON.stringify(delivery.payload);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "GitHub-Hookshot/7c2a9f1",
    "x-github-event": delivery.event,
    "x-github-delivery": deliveryId,
    "x-github-hook-id": "1",
    "x-github-hook-installation-target-id": "1",
    "x-github-hook-installation-target-type": "repository",
  };
  if (delivery.signature !== undefined) {
    headers["x-hub-signature-256"] = delivery.signature;
  } else if (delivery.secret !== undefined) {
    headers["x-hub-signature-256"] = await sign(delivery.secret, body);
    headers["x-hub-signature"] = `sha1=${createHmac("sha1", delivery.secret).update(body).digest("hex")}`;
  }
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, body: await response.text(), deliveryId };
}
