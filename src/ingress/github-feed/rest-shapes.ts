import { z } from "zod";

/**
 * What the GitHub REST API answers the change feed: the routes it asks, and the fields of each
 * answer it reads. Only those fields are checked; the rest travels on untouched in the webhook
 * payloads the feed builds, which the one normalizer (`ingress/github-events.ts`) reads.
 */

export const ISSUES = "GET /repos/{owner}/{repo}/issues";
export const ISSUE = "GET /repos/{owner}/{repo}/issues/{issue_number}";
export const ISSUE_EVENTS = "GET /repos/{owner}/{repo}/issues/{issue_number}/events";
export const COMMENTS = "GET /repos/{owner}/{repo}/issues/comments";
export const REVIEW_COMMENTS = "GET /repos/{owner}/{repo}/pulls/comments";
export const PULL = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
export const REVIEWS = "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews";

/** Entries asked for per page (GitHub's maximum). */
export const PER_PAGE = 100;

export interface RestUser {
  readonly login?: string;
}

export interface RestIssue {
  readonly number: number;
  readonly state: "open" | "closed";
  readonly labels?: readonly (string | { readonly name?: string })[];
  readonly updated_at: string;
  readonly closed_at?: string | null;
  readonly body?: string | null;
  readonly pull_request?: unknown;
}

export interface RestComment {
  readonly id: number;
  readonly node_id?: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly issue_url?: string;
  readonly pull_request_url?: string;
  readonly user?: RestUser | null;
}

export interface RestReview {
  readonly id: number;
  readonly node_id?: string;
  readonly state?: string;
  readonly submitted_at?: string | null;
  readonly user?: RestUser | null;
}

export interface RestIssueEvent {
  readonly event?: string;
  readonly created_at?: string;
  readonly actor?: RestUser | null;
  readonly label?: { readonly name?: string } | null;
}

/** A timestamp as GitHub writes them (anything Date.parse reads). */
export function isTime(value: unknown): value is string {
  return typeof value === "string" && !Number.isNaN(Date.parse(value));
}

// Each guard checks every field its type names, not only the ones the feed compares: the rest are
// read too (labels, the user, the URLs) and travel into the payloads. Unknown keys are kept, and
// the value a guard passes is the answer itself, untouched, for the payload the normalizer reads.
const time = z.string().refine(isTime);
const userSchema = z.looseObject({ login: z.string().optional() });
const labelSchema = z.union([z.string(), z.looseObject({ name: z.string().optional() })]);

const issueSchema = z.looseObject({
  number: z.number(),
  state: z.enum(["open", "closed"]),
  labels: z.array(labelSchema).optional(),
  updated_at: time,
  closed_at: z.string().nullable().optional(),
  body: z.string().nullable().optional(),
  pull_request: z.unknown().optional(),
}) satisfies z.ZodType<RestIssue>;

const commentSchema = z.looseObject({
  id: z.number(),
  node_id: z.string().optional(),
  created_at: time,
  updated_at: time,
  issue_url: z.string().optional(),
  pull_request_url: z.string().optional(),
  user: userSchema.nullable().optional(),
}) satisfies z.ZodType<RestComment>;

const reviewSchema = z.looseObject({
  id: z.number(),
  node_id: z.string().optional(),
  state: z.string().optional(),
  submitted_at: z.string().nullable().optional(),
  user: userSchema.nullable().optional(),
}) satisfies z.ZodType<RestReview>;

const issueEventSchema = z.looseObject({
  event: z.string().optional(),
  created_at: z.string().optional(),
  actor: userSchema.nullable().optional(),
  label: z.looseObject({ name: z.string().optional() }).nullable().optional(),
}) satisfies z.ZodType<RestIssueEvent>;

export function isIssue(value: unknown): value is RestIssue {
  return issueSchema.safeParse(value).success;
}

export function isComment(value: unknown): value is RestComment {
  return commentSchema.safeParse(value).success;
}

export function isReview(value: unknown): value is RestReview {
  return reviewSchema.safeParse(value).success;
}

export function isIssueEvent(value: unknown): value is RestIssueEvent {
  return issueEventSchema.safeParse(value).success;
}

/** The issues API serves pull requests too; those carry a `pull_request` key. */
export function isPullIssue(item: RestIssue): boolean {
  return item.pull_request !== undefined && item.pull_request !== null;
}

/** The names of an item's labels (the API gives a name or an object with one). */
export function labelsOf(item: { labels?: RestIssue["labels"] }): string[] {
  const names: string[] = [];
  for (const label of item.labels ?? []) {
    const name = typeof label === "string" ? label : label.name;
    if (typeof name === "string" && name !== "") names.push(name);
  }
  return names;
}

/** The number at the end of `.../issues/12` or `.../pulls/12`. */
export function numberIn(url: string | undefined, section: "issues" | "pulls"): number | undefined {
  const match = url === undefined ? null : new RegExp(`/${section}/([0-9]+)$`).exec(url);
  return match ? Number(match[1]) : undefined;
}

/**
 * The ETag worth keeping from a listing's answer: only one that fits on one page. The ETag is
 * the first page's, so for a longer listing a change on a later page would still be answered 304.
 */
export function onePage(result: { items: readonly unknown[]; etag?: string; truncated: boolean }): string | undefined {
  return result.items.length < PER_PAGE && !result.truncated ? result.etag : undefined;
}

/** Thrown by a read when GitHub limits the rate; shaped like GitHubRateLimitError. */
export interface RateLimitLike {
  readonly resetAt: Date;
  readonly secondary?: boolean;
}

export function rateLimitOf(error: unknown): RateLimitLike | undefined {
  if (typeof error !== "object" || error === null || !("resetAt" in error) || !(error.resetAt instanceof Date)) return undefined;
  const secondary = "secondary" in error ? error.secondary : undefined;
  return typeof secondary === "boolean" ? { resetAt: error.resetAt, secondary } : { resetAt: error.resetAt };
}

/** A resource that is not there (any more): 404 or 410. */
export function isGone(error: unknown): boolean {
  const status = typeof error === "object" && error !== null && "status" in error ? error.status : undefined;
  return status === 404 || status === 410;
}

/** A repository as the feed addresses it. */
export interface RepoName {
  /** Lower case `owner/repo`: the cursor key. */
  readonly key: string;
  readonly owner: string;
  readonly repo: string;
}

/** The longest X-Poll-Interval GitHub asked for during one read, in seconds (0: none). */
export interface PollInterval {
  seconds: number;
}

export function noteInterval(interval: PollInterval, seconds: number | undefined): void {
  if (seconds !== undefined && seconds > interval.seconds) interval.seconds = seconds;
}

// exactOptionalPropertyTypes-friendly: leave a key out rather than set it to undefined.
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
