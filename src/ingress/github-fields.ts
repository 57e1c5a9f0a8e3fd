import type { InboundEvent, InboundSource } from "../routing/inbound.js";
import { DEFAULT_GITHUB_HOST, RefError, parseWorkItemRef } from "../workitem/index.js";
import type { GitHubRef } from "../workitem/index.js";

/**
 * What every GitHub payload normalizer reads a payload with (github-events.ts for items and
 * comments, github-check-events.ts for CI): the delivery's context, the repository, refs, and
 * fields read with their type checked, a mismatch thrown as MalformedPayload.
 */

export interface GitHubEventContext {
  readonly deliveryId: string;
  readonly source: InboundSource;
  /**
   * The configured GitHub's web host (github.com when unset; a GHES host as refHostForApiUrl
   * derives it from `integrations.github.apiUrl`). Refs are on it, and every html_url in a
   * payload must be an https URL on it.
   */
  readonly defaultHost?: string;
}

/**
 * `ignored`: nothing to act on (the receiver answers 202). `rejected`: a routed event whose payload
 * is not what GitHub sends, with the first mismatch — refused, and recorded, by its caller.
 */
export type NormalizeResult = { readonly event: InboundEvent } | { readonly ignored: string } | { readonly rejected: string };

export type Json = Readonly<Record<string, unknown>>;

/** Thrown by the normalizers only; inboundFromGitHub turns it into a rejected result. */
export class MalformedPayload extends Error {}

/** The configured GitHub's web host, in lower case. */
export function configuredHost(context: GitHubEventContext): string {
  return context.defaultHost ? context.defaultHost.toLowerCase() : DEFAULT_GITHUB_HOST;
}

export interface Repository {
  readonly host: string;
  readonly owner: string;
  readonly repo: string;
  /** `owner/repo` as GitHub spells it, for comparing with a head repository. */
  readonly fullName: string;
}

export function repositoryOf(root: Json, context: GitHubEventContext): Repository {
  const repository = objectOf(root.repository, "repository");
  const fullName = optionalString(repository.full_name, "repository.full_name");
  let owner: string | undefined;
  let repo: string | undefined;
  if (fullName !== undefined) {
    const parts = fullName.split("/");
    if (parts.length !== 2) throw new MalformedPayload(`repository.full_name "${fullName}" is not owner/repo`);
    [owner, repo] = parts;
  } else {
    owner = loginOf(repository.owner) ?? undefined;
    repo = optionalString(repository.name, "repository.name");
  }
  if (!owner || !repo) throw new MalformedPayload("repository names no owner/repo");
  // Every html_url was checked to be on this host.
  return { host: configuredHost(context), owner, repo, fullName: `${owner}/${repo}` };
}

// Refs parsed recently, by their text: deliveries come in runs about the same few items, and a
// ref is only read here (a work item copies what it needs). Emptied when full.
const REF_CACHE_SIZE = 1_024;
const parsedRefs = new Map<string, GitHubRef>();

export function githubRef(repository: Repository, number: number): GitHubRef {
  const path = repository.host === DEFAULT_GITHUB_HOST ? `${repository.owner}/${repository.repo}` : `${repository.host}/${repository.owner}/${repository.repo}`;
  const text = `github:${path}#${number}`;
  const known = parsedRefs.get(text);
  if (known !== undefined) return known;
  try {
    const ref = parseWorkItemRef(text);
    if (ref.tracker !== "github") throw new MalformedPayload("not a GitHub reference");
    if (parsedRefs.size >= REF_CACHE_SIZE) parsedRefs.clear();
    parsedRefs.set(text, ref);
    return ref;
  } catch (error) {
    if (error instanceof RefError) throw new MalformedPayload(error.message);
    throw error;
  }
}

export function unsupportedAction(action: string): NormalizeResult {
  return { ignored: `unsupported-action:${action}` };
}

export function objectOrUndefined(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

export function objectOf(value: unknown, what: string): Json {
  const object = objectOrUndefined(value);
  if (object === undefined) throw new MalformedPayload(`${what} is not an object`);
  return object;
}

/** Absent and null read as undefined; any other non-string is a malformed payload. */
export function optionalString(value: unknown, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new MalformedPayload(`${what} is not a string`);
  return value;
}

export function idOf(value: unknown, what: string): string {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "string" && value !== "") return value;
  throw new MalformedPayload(`${what} is missing`);
}

export function loginOf(user: unknown): string | null {
  const login = objectOrUndefined(user)?.login;
  return typeof login === "string" && login !== "" ? login : null;
}

export function nowIso(): string {
  return new Date().toISOString();
}
