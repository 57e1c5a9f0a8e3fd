import { z } from "zod";

/**
 * The part of each routed GitHub payload the-loop reads, as zod schemas: a signed delivery (or a
 * REST answer the poller shapes the same way) that does not match is refused, never acted on.
 * Objects are loose — GitHub adds fields all the time, and what the-loop does not read may be
 * anything — but every field it does read must have GitHub's type. Checked against GitHub's own
 * example payloads (test/ingress/fixtures/github-webhook-examples.json).
 *
 * Every `html_url` must be a web address on the configured GitHub host (https; plain http only
 * when that host is this machine, as for the API itself): an item's URL is written into the
 * agent's prompt and into records, so `javascript:` or another host must never get there.
 */

export type PayloadCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** At most this much of a reason is kept: it is recorded, and built from what the sender wrote. */
const REASON_MAX = 200;

const text = z.string().nullish();
const time = z.string().nullish();
const user = z.looseObject({ login: z.string() }).nullish();
const label = z.looseObject({ name: z.string().min(1) });
const id = z.number().int().positive();

/** `host[:port]`, lower case, as refHostForApiUrl gives it. */
function isLoopback(host: string): boolean {
  const name = host.replace(/:\d+$/, "");
  return name === "localhost" || name === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(name);
}

// A host that the URL parser gives back exactly as written: lower-case names, the last one not a
// number (that would be read as an IPv4 address), no punycode to check, no port.
const PLAIN_HOST = /^(?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*$/;

/** Whether `value` is a web address on `host`: https (http on this machine only), no credentials. */
export function isGitHubWebUrl(value: string, host: string): boolean {
  // What GitHub sends: `https://<host>/…`. The first `/` after the host ends the authority, so
  // such an address has no credentials and that host; parsing it would say the same, slower.
  if (value.startsWith("https://") && value.startsWith("/", 8 + host.length) && value.startsWith(host, 8) && isPlainHost(host)) return true;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  const schemeOk = url.protocol === "https:" || (url.protocol === "http:" && isLoopback(host));
  return schemeOk && url.username === "" && url.password === "" && url.host.toLowerCase() === host;
}

const plainHosts = new Map<string, boolean>();

function isPlainHost(host: string): boolean {
  let plain = plainHosts.get(host);
  if (plain === undefined) {
    plain = PLAIN_HOST.test(host) && !host.split(".").some((label) => label.startsWith("xn--"));
    // One entry per configured host; a test may configure a few.
    if (plainHosts.size < 64) plainHosts.set(host, plain);
  }
  return plain;
}

interface Schemas {
  readonly issues: z.ZodType;
  readonly issue_comment: z.ZodType;
  readonly pull_request: z.ZodType;
  readonly pull_request_review: z.ZodType;
  readonly pull_request_review_comment: z.ZodType;
  readonly check_run: z.ZodType;
  readonly check_suite: z.ZodType;
  readonly status: z.ZodType;
}

function schemasFor(host: string): Schemas {
  const webUrl = z
    .string()
    .refine((value) => isGitHubWebUrl(value, host), { message: `is not an https URL on ${host}` })
    .nullish();
  const repository = z.looseObject({
    full_name: text,
    name: text,
    owner: user,
    html_url: webUrl,
  });
  const item = {
    number: id,
    node_id: text,
    id: z.number().int().nullish(),
    state: z.enum(["open", "closed"]),
    title: text,
    body: text,
    labels: z.array(label).nullish(),
    html_url: webUrl,
    updated_at: time,
  };
  // On an issue, GitHub marks a pull request with an object of its URLs; null or absent otherwise.
  const issue = z.looseObject({ ...item, pull_request: z.looseObject({}).nullish() });
  const pull = z.looseObject({
    ...item,
    head: z
      .looseObject({
        ref: text,
        // null when the head's repository was deleted
        repo: z.looseObject({ full_name: text }).nullish(),
      })
      .nullish(),
    base: z.looseObject({ repo: z.looseObject({ full_name: text }).nullish() }).nullish(),
    merged: z.boolean().nullish(),
    merged_at: time,
    merged_by: user,
    closed_at: time,
  });
  const comment = z.looseObject({
    id,
    body: text,
    user,
    html_url: webUrl,
    created_at: time,
  });
  const common = { action: z.string().min(1), repository, sender: user, label: label.nullish() };
  // A check names the pull requests of its head commit; a fork's arrive as an empty list.
  const pullRefs = z
    .array(z.looseObject({ number: id, base: z.looseObject({ repo: z.looseObject({ id: z.number().int().nullish() }).nullish() }).nullish() }))
    .nullish();
  const app = z.looseObject({ slug: text, name: text }).nullish();
  const sha = z.string().regex(/^[0-9a-f]{7,64}$/i);
  return {
    issues: z.looseObject({ ...common, issue }),
    issue_comment: z.looseObject({ ...common, issue, comment }),
    pull_request: z.looseObject({ ...common, pull_request: pull }),
    pull_request_review: z.looseObject({
      ...common,
      pull_request: pull,
      review: z.looseObject({ id, body: text, state: text, user, html_url: webUrl, submitted_at: time }),
    }),
    pull_request_review_comment: z.looseObject({
      ...common,
      pull_request: pull,
      comment: comment.extend({ path: text, line: z.number().int().nullish(), original_line: z.number().int().nullish() }),
    }),
    check_run: z.looseObject({
      ...common,
      check_run: z.looseObject({
        id,
        name: z.string().min(1),
        head_sha: sha,
        status: text,
        conclusion: text,
        html_url: webUrl,
        app,
        pull_requests: pullRefs,
        check_suite: z.looseObject({ id: id.nullish() }).nullish(),
      }),
    }),
    check_suite: z.looseObject({
      ...common,
      check_suite: z.looseObject({ id, head_sha: sha, status: text, conclusion: text, app, pull_requests: pullRefs }),
    }),
    status: z.looseObject({
      repository,
      sender: user,
      id: z.number().int().nullish(),
      sha,
      context: z.string().min(1),
      state: z.string().min(1),
      target_url: text,
      commit: z.looseObject({ html_url: webUrl }).nullish(),
    }),
  };
}

// One set per configured host: a daemon has one, a test a few.
const cache = new Map<string, Schemas>();

// ---------------------------------------------------------------------------------------------
// The same shapes, checked by hand: zod's parse copies every key of every loose object it checks,
// which cost the receiver's acknowledgement path several µs per delivery. These only say yes when
// the schema above would (each mirrors one schema, field for field); anything else goes to zod,
// which finds the reason. So what is accepted and what a refusal says stay zod's.

type Fields = Readonly<Record<string, unknown>>;

function isRecord(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const nullish = (value: unknown): boolean => value === undefined || value === null;
const isText = (value: unknown): boolean => nullish(value) || typeof value === "string";
const isUser = (value: unknown): boolean => nullish(value) || (isRecord(value) && typeof value.login === "string");
const isLabel = (value: unknown): boolean => isRecord(value) && typeof value.name === "string" && value.name.length >= 1;
const isId = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value) && value > 0;
const isInt = (value: unknown): boolean => nullish(value) || (typeof value === "number" && Number.isSafeInteger(value));
const isWebUrl = (value: unknown, host: string): boolean => nullish(value) || (typeof value === "string" && isGitHubWebUrl(value, host));

function isLabels(value: unknown): boolean {
  if (nullish(value)) return true;
  if (!Array.isArray(value)) return false;
  for (const label of value) if (!isLabel(label)) return false;
  return true;
}

function isRepository(value: unknown, host: string): boolean {
  return isRecord(value) && isText(value.full_name) && isText(value.name) && isUser(value.owner) && isWebUrl(value.html_url, host);
}

function isItem(value: Fields, host: string): boolean {
  return (
    isId(value.number) &&
    isText(value.node_id) &&
    isInt(value.id) &&
    (value.state === "open" || value.state === "closed") &&
    isText(value.title) &&
    isText(value.body) &&
    isLabels(value.labels) &&
    isWebUrl(value.html_url, host) &&
    isText(value.updated_at)
  );
}

function isIssue(value: unknown, host: string): boolean {
  return isRecord(value) && isItem(value, host) && (nullish(value.pull_request) || isRecord(value.pull_request));
}

function isFullNamed(value: unknown): boolean {
  return nullish(value) || (isRecord(value) && isText(value.full_name));
}

function isPull(value: unknown, host: string): boolean {
  if (!isRecord(value) || !isItem(value, host)) return false;
  const head = value.head;
  const base = value.base;
  return (
    (nullish(head) || (isRecord(head) && isText(head.ref) && isFullNamed(head.repo))) &&
    (nullish(base) || (isRecord(base) && isFullNamed(base.repo))) &&
    (nullish(value.merged) || typeof value.merged === "boolean") &&
    isText(value.merged_at) &&
    isUser(value.merged_by) &&
    isText(value.closed_at)
  );
}

function isComment(value: unknown, host: string): value is Fields {
  return isRecord(value) && isId(value.id) && isText(value.body) && isUser(value.user) && isWebUrl(value.html_url, host) && isText(value.created_at);
}

function isCommon(value: Fields, host: string): boolean {
  return (
    typeof value.action === "string" &&
    value.action.length >= 1 &&
    isRepository(value.repository, host) &&
    isUser(value.sender) &&
    (nullish(value.label) || isLabel(value.label))
  );
}

function isReview(value: unknown, host: string): boolean {
  return (
    isRecord(value) &&
    isId(value.id) &&
    isText(value.body) &&
    isText(value.state) &&
    isUser(value.user) &&
    isWebUrl(value.html_url, host) &&
    isText(value.submitted_at)
  );
}

/** No hand check: CI events are rare next to comments, so zod alone decides them. */
const byZod = (): boolean => false;

const CONFORMS: Readonly<Record<keyof Schemas, (payload: Fields, host: string) => boolean>> = {
  check_run: byZod,
  check_suite: byZod,
  status: byZod,
  issues: (payload, host) => isCommon(payload, host) && isIssue(payload.issue, host),
  issue_comment: (payload, host) => isCommon(payload, host) && isIssue(payload.issue, host) && isComment(payload.comment, host),
  pull_request: (payload, host) => isCommon(payload, host) && isPull(payload.pull_request, host),
  pull_request_review: (payload, host) => isCommon(payload, host) && isPull(payload.pull_request, host) && isReview(payload.review, host),
  pull_request_review_comment: (payload, host) => {
    const comment = payload.comment;
    return (
      isCommon(payload, host) &&
      isPull(payload.pull_request, host) &&
      isComment(comment, host) &&
      isText(comment.path) &&
      isInt(comment.line) &&
      isInt(comment.original_line)
    );
  },
};

const OK: PayloadCheck = { ok: true };

/**
 * Checks a payload of a routed event (`name` one of the keys of Schemas) against what GitHub
 * sends on `host`. The reason names the first field that does not match, never its value.
 */
export function checkGitHubPayload(name: keyof Schemas, payload: unknown, host: string): PayloadCheck {
  if (isRecord(payload) && CONFORMS[name](payload, host)) return OK;
  return checkAgainstSchemas(name, payload, host);
}

/** The check by the zod schemas alone, which checkGitHubPayload must always agree with (its tests compare them). */
export function checkAgainstSchemas(name: keyof Schemas, payload: unknown, host: string): PayloadCheck {
  let schemas = cache.get(host);
  if (schemas === undefined) {
    schemas = schemasFor(host);
    cache.set(host, schemas);
  }
  const result = schemas[name].safeParse(payload);
  if (result.success) return { ok: true };
  const issue = result.error.issues[0];
  const path = issue === undefined || issue.path.length === 0 ? "payload" : issue.path.map(String).join(".");
  const message = issue?.message ?? "does not match";
  return { ok: false, reason: `${path}: ${message}`.slice(0, REASON_MAX) };
}

export type RoutedGitHubEvent = keyof Schemas;
