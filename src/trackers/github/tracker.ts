import { z } from "zod";
import { redactKnownSecrets } from "../../secrets.js";
import { formatWorkItemRef, githubItemUrl, workItemOf } from "../../workitem/index.js";
import type { GitHubRef, WorkItemKind, WorkItemRef } from "../../workitem/index.js";
import { WorkItemNotFoundError } from "../tracker.js";
import type { ItemThread, PullRequestHead, ReactionTarget, RepositoryInfo, SelfLogin, Tracker, TrackerComment, WorkItemState } from "../tracker.js";
import type { GitHubClient } from "./client.js";
import { GitHubError, GitHubNotFoundError, UnsupportedGitHubHostError } from "./errors.js";
import { lookUpSelfLogin } from "./self-login.js";
import type { SelfLoginRetry } from "./self-login.js";

/** The parts of GitHub's issue JSON the-loop reads (the issues API serves pull requests too). */
export interface GitHubIssueJson {
  readonly number: number;
  readonly node_id: string;
  readonly html_url: string;
  readonly title: string;
  readonly body?: string | null;
  readonly user: { readonly login: string } | null;
  readonly state: string;
  readonly labels: ReadonlyArray<string | { readonly name?: string | null }>;
  readonly created_at: string;
  readonly updated_at: string;
  readonly closed_at: string | null;
  readonly pull_request?: unknown;
}

interface CommentJson {
  readonly id: number;
  readonly body?: string | null;
  readonly user: { readonly login: string } | null;
  readonly created_at: string;
  readonly html_url: string;
}

interface RepositoryJson {
  readonly clone_url: string;
  readonly default_branch: string;
}

interface PullRequestJson {
  readonly body?: string | null;
  readonly state: string;
  readonly merged?: boolean;
  readonly merged_at?: string | null;
  readonly head: { readonly ref: string; readonly sha: string; readonly repo: { readonly full_name: string } | null };
  readonly base: { readonly ref: string };
}

/** What PR linkage and workspaces need to know about a pull request. */
export interface PullRequestInfo extends PullRequestHead {
  readonly headSha: string;
  readonly baseBranch: string;
  readonly body: string;
  readonly merged: boolean;
}

export interface GitHubTrackerOptions {
  /** `integrations.github.selfLogin`: the login the-loop posts as, so GitHub is never asked. */
  readonly selfLogin?: string | undefined;
  /** How a `GET /user` lookup retries a transient failure. */
  readonly selfLoginRetry?: SelfLoginRetry;
}

const ITEM_ROUTE = "GET /repos/{owner}/{repo}/issues/{issue_number}";
const COMMENT_ROUTE = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";
const REPOSITORY_ROUTE = "GET /repos/{owner}/{repo}";
const PULL_ROUTE = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
const COMMENTS_ROUTE = "GET /repos/{owner}/{repo}/issues/{issue_number}/comments";
/** GitHub's largest page of a listing. */
const PAGE_SIZE = 100;

// What GitHub answers is parsed before it is read: a proxy, an Enterprise version or a fault may
// answer something else, which is then a GitHubError naming the route, not a TypeError later.
const loginSchema = z.object({ login: z.string() });

const issueSchema = z.object({
  number: z.number(),
  node_id: z.string(),
  html_url: z.string(),
  title: z.string(),
  body: z.string().nullable().optional(),
  user: loginSchema.nullable(),
  state: z.string(),
  labels: z.array(z.union([z.string(), z.object({ name: z.string().nullable().optional() })])),
  created_at: z.string(),
  updated_at: z.string(),
  closed_at: z.string().nullable(),
  pull_request: z.unknown().optional(),
}) satisfies z.ZodType<GitHubIssueJson>;

const commentSchema = z.object({
  id: z.number(),
  body: z.string().nullable().optional(),
  user: loginSchema.nullable(),
  created_at: z.string(),
  html_url: z.string(),
}) satisfies z.ZodType<CommentJson>;

const threadSchema = z.object({ title: z.string(), comments: z.number().int().nonnegative() });

const repositorySchema = z.object({ clone_url: z.string(), default_branch: z.string() }) satisfies z.ZodType<RepositoryJson>;

const pullRequestSchema = z.object({
  body: z.string().nullable().optional(),
  state: z.string(),
  merged: z.boolean().optional(),
  merged_at: z.string().nullable().optional(),
  head: z.object({ ref: z.string(), sha: z.string(), repo: z.object({ full_name: z.string() }).nullable() }),
  base: z.object({ ref: z.string() }),
}) satisfies z.ZodType<PullRequestJson>;

/** GitHub's answer to `route` as `schema` reads it; else a GitHubError saying what did not fit. */
function answerOf<T>(schema: z.ZodType<T>, data: unknown, route: string, what: string): T {
  const result = schema.safeParse(data);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const at = issue !== undefined && issue.path.length > 0 ? ` at ${issue.path.join(".")}` : "";
  throw new GitHubError(`GitHub ${route}: the answer is not ${what} as GitHub sends one (${issue?.message ?? "unexpected shape"}${at})`, { route });
}

/**
 * The GitHub side of the tracker seam, over one API (github.com or one Enterprise host). It has
 * no change feed (`TrackerChangeFeed`): GitHub's changes are read by the poller's GitHub feed in
 * `ingress/github-feed/` (see TrackerChangeFeed for why).
 */
export class GitHubTracker implements Tracker {
  readonly kind = "github" as const;
  private readonly repositories = new Map<string, Promise<RepositoryInfo>>();
  private knownSelfLogin: string | undefined;
  private selfLoginLookup: Promise<SelfLogin> | undefined;

  constructor(
    readonly client: GitHubClient,
    private readonly options: GitHubTrackerOptions = {},
  ) {}

  async getItem(ref: WorkItemRef): Promise<WorkItemState> {
    const github = this.check(ref);
    try {
      const result = await this.client.get(ITEM_ROUTE, itemParams(github));
      // Without an ETag the answer is never "not modified".
      if (result.notModified) throw new GitHubError(`GitHub ${ITEM_ROUTE}: unexpected 304`);
      return workItemStateOf(github, answerOf(issueSchema, result.data, ITEM_ROUTE, "an issue"));
    } catch (error) {
      throw notFoundAsItem(error, github);
    }
  }

  async postComment(ref: WorkItemRef, body: string): Promise<TrackerComment> {
    const github = this.check(ref);
    try {
      const data = await this.client.request(COMMENT_ROUTE, {
        ...itemParams(github),
        // What the-loop posts may quote text a hook or a server echoed a secret in (src/secrets.ts).
        body: redactKnownSecrets(body),
      });
      return commentOf(answerOf(commentSchema, data, COMMENT_ROUTE, "a comment"), "comment");
    } catch (error) {
      throw notFoundAsItem(error, github);
    }
  }

  async addLabel(ref: WorkItemRef, label: string): Promise<void> {
    const github = this.check(ref);
    try {
      await this.client.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", {
        ...itemParams(github),
        labels: [label],
      });
    } catch (error) {
      throw notFoundAsItem(error, github);
    }
  }

  async removeLabel(ref: WorkItemRef, label: string): Promise<void> {
    const github = this.check(ref);
    try {
      await this.client.request("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", {
        ...itemParams(github),
        name: label,
      });
    } catch (error) {
      // GitHub answers 404 both for a label the item lacks and for a missing item; only the
      // first is fine, so a 404 is told apart by asking for the item.
      if (!(error instanceof GitHubNotFoundError)) throw error;
      await this.getItem(github);
    }
  }

  async react(target: ReactionTarget, content: string): Promise<void> {
    const github = this.check(target.workItem);
    const repo = { owner: github.owner, repo: github.repo };
    const commentId = target.commentId;
    if (commentId !== undefined && target.commentKind === "comment") {
      await this.client.request("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {
        ...repo,
        comment_id: commentId,
        content,
      });
    } else if (commentId !== undefined && target.commentKind === "review_comment") {
      await this.client.request("POST /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions", {
        ...repo,
        comment_id: commentId,
        content,
      });
    } else {
      // A review body has no reactions on GitHub, so the acknowledgement goes on the item.
      await this.client.request("POST /repos/{owner}/{repo}/issues/{issue_number}/reactions", {
        ...itemParams(github),
        content,
      });
    }
  }

  /** Clone URL and default branch; asked once per repository for the life of the process. */
  async repository(ref: WorkItemRef): Promise<RepositoryInfo> {
    const github = this.check(ref);
    const key = `${github.owner}/${github.repo}`;
    let info = this.repositories.get(key);
    if (!info) {
      info = this.client.request(REPOSITORY_ROUTE, { owner: github.owner, repo: github.repo }).then((answer) => {
        const data = answerOf(repositorySchema, answer, REPOSITORY_ROUTE, "a repository");
        return { cloneUrl: data.clone_url, defaultBranch: data.default_branch };
      });
      this.repositories.set(key, info);
      // A failure is not remembered: the next spawn asks again.
      info.catch(() => {
        if (this.repositories.get(key) === info) this.repositories.delete(key);
      });
    }
    return info;
  }

  /**
   * Whom the token acts as: `integrations.github.selfLogin` when it is set (then GitHub is never
   * asked), else `GET /user`, asked once for the life of the tracker once GitHub has said. A
   * failure is not remembered, and is never "no login": it is unknown, permanent (401, 403: a
   * GitHub App installation token always gets 403) or transient (5xx, network, rate limits),
   * and a transient one is asked again with backoff within the lookup's bound (self-login.ts).
   * Calls while a lookup runs share it.
   */
  selfLogin(): Promise<SelfLogin> {
    if (this.options.selfLogin !== undefined) return Promise.resolve({ kind: "known", login: this.options.selfLogin });
    if (this.knownSelfLogin !== undefined) return Promise.resolve({ kind: "known", login: this.knownSelfLogin });
    if (this.selfLoginLookup === undefined) {
      // The client's own retries are off for this request: the lookup's backoff is the one bound.
      const lookup = lookUpSelfLogin(() => this.client.request("GET /user", { request: { retries: 0 } }), this.options.selfLoginRetry);
      this.selfLoginLookup = lookup;
      void lookup.then((answer) => {
        if (answer.kind === "known") this.knownSelfLogin = answer.login;
        if (this.selfLoginLookup === lookup) this.selfLoginLookup = undefined;
      });
    }
    return this.selfLoginLookup;
  }

  async pullRequest(ref: WorkItemRef): Promise<PullRequestInfo> {
    const github = this.check(ref);
    let answer: unknown;
    try {
      answer = await this.client.request(PULL_ROUTE, {
        owner: github.owner,
        repo: github.repo,
        pull_number: github.number,
      });
    } catch (error) {
      if (error instanceof GitHubNotFoundError) {
        throw new WorkItemNotFoundError(formatWorkItemRef(github), "no pull request by that number");
      }
      throw error;
    }
    const data = answerOf(pullRequestSchema, answer, PULL_ROUTE, "a pull request");
    const headRepo = data.head.repo?.full_name.toLowerCase();
    return {
      headBranch: data.head.ref,
      headSha: data.head.sha,
      headInRepository: headRepo === `${github.owner}/${github.repo}`,
      baseBranch: data.base.ref,
      body: data.body ?? "",
      state: data.state === "closed" ? "closed" : "open",
      merged: data.merged ?? (data.merged_at !== undefined && data.merged_at !== null),
    };
  }

  /**
   * The item's title and its last `limit` conversation comments, oldest first: the issue is read
   * for its comment count, then only the pages that hold the last ones (GitHub lists oldest
   * first), so a long thread costs as few requests as a short one.
   */
  async recentComments(ref: WorkItemRef, limit: number): Promise<ItemThread> {
    const github = this.check(ref);
    try {
      const issue = await this.client.get(ITEM_ROUTE, itemParams(github));
      if (issue.notModified) throw new GitHubError(`GitHub ${ITEM_ROUTE}: unexpected 304`);
      const { title, comments: count } = answerOf(threadSchema, issue.data, ITEM_ROUTE, "an issue");
      const lastPage = Math.max(1, Math.ceil(count / PAGE_SIZE));
      const firstPage = Math.max(1, lastPage - Math.ceil(limit / PAGE_SIZE));
      const comments: TrackerComment[] = [];
      for (let page = firstPage; page <= lastPage; page++) {
        const listed = await this.client.get(COMMENTS_ROUTE, { ...itemParams(github), per_page: PAGE_SIZE, page });
        if (listed.notModified) throw new GitHubError(`GitHub ${COMMENTS_ROUTE}: unexpected 304`);
        const data = answerOf(z.array(commentSchema), listed.data, COMMENTS_ROUTE, "a list of comments");
        comments.push(...data.map((comment) => commentOf(comment, "comment")));
      }
      return { title, comments: comments.slice(-limit) };
    } catch (error) {
      throw notFoundAsItem(error, github);
    }
  }

  /** A GitHub ref on the host this client serves; anything else is refused with the fix. */
  private check(ref: WorkItemRef): GitHubRef {
    if (ref.tracker !== "github") {
      throw new Error(`${formatWorkItemRef(ref)} is not a GitHub work item`);
    }
    if (ref.host !== this.client.host) {
      throw new UnsupportedGitHubHostError(formatWorkItemRef(ref), ref.host, this.client.apiUrl, this.client.host);
    }
    return ref;
  }
}

function itemParams(ref: GitHubRef): { owner: string; repo: string; issue_number: number } {
  return { owner: ref.owner, repo: ref.repo, issue_number: ref.number };
}

function notFoundAsItem(error: unknown, ref: GitHubRef): unknown {
  if (error instanceof GitHubNotFoundError) {
    return new WorkItemNotFoundError(formatWorkItemRef(ref), `GitHub answered ${error.status ?? 404}`);
  }
  return error;
}

function labelNames(labels: GitHubIssueJson["labels"]): string[] {
  const names: string[] = [];
  for (const label of labels) {
    const name = typeof label === "string" ? label : label.name;
    if (name) names.push(name);
  }
  return names;
}

/** A WorkItemState from GitHub's issue JSON (also what the issue listings carry). */
export function workItemStateOf(ref: GitHubRef, issue: GitHubIssueJson): WorkItemState {
  const kind: WorkItemKind = issue.pull_request ? "pull_request" : "issue";
  return {
    item: workItemOf(ref, { kind, url: issue.html_url || githubItemUrl(ref, kind), id: issue.node_id }),
    title: issue.title,
    body: issue.body ?? "",
    author: issue.user?.login ?? null,
    state: issue.state === "closed" ? "closed" : "open",
    labels: labelNames(issue.labels),
    createdAt: issue.created_at,
    updatedAt: issue.updated_at,
    closedAt: issue.closed_at,
  };
}

function commentOf(data: CommentJson, kind: TrackerComment["kind"]): TrackerComment {
  return {
    id: String(data.id),
    author: data.user?.login ?? null,
    body: data.body ?? "",
    createdAt: data.created_at,
    url: data.html_url,
    kind,
  };
}
