import { createHash, randomBytes } from "node:crypto";
import { LOOPBACK_HOSTS } from "../config/dashboard-schema.js";
import type { DashboardConfig } from "../config/dashboard-schema.js";

/**
 * The dashboard's security decisions, as plain functions over data (docs/dashboard.md,
 * "Security"): where it may listen, which Host and Origin it answers, what the session cookie
 * looks like, and the one-time logins and sessions it keeps — in memory, as hashes: a token is
 * printed once (`the-loop dashboard`), a cookie set once, and neither is written anywhere.
 */

export const COOKIE_NAME = "the_loop_dashboard";
/** How long a login URL may wait for its browser. */
export const LOGIN_TTL_MS = 5 * 60_000;
/** Bounds on what the daemon keeps: a flood of logins or sessions evicts the oldest. */
export const LOGINS_MAX = 32;
export const SESSIONS_MAX = 256;

export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return (LOOPBACK_HOSTS as readonly string[]).includes(bare) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

export type BindDecision = { readonly ok: true; readonly tls: boolean; readonly warning?: string } | { readonly ok: false; readonly reason: string };

/** Loopback needs nothing; any other address needs TLS, or the explicit acknowledgement (warned about at every start). */
export function bindDecision(config: Pick<DashboardConfig, "host" | "tls" | "insecureAllowPlainHttp">): BindDecision {
  const tls = config.tls !== undefined;
  if (isLoopback(config.host) || tls) return { ok: true, tls };
  if (config.insecureAllowPlainHttp) {
    return {
      ok: true,
      tls: false,
      warning: `the dashboard serves plain HTTP on ${config.host} (dashboard.insecureAllowPlainHttp): its login URL and session cookie cross the network unencrypted; give it dashboard.tls instead`,
    };
  }
  return {
    ok: false,
    reason: `the dashboard would listen on ${config.host}, which is not loopback, without TLS: set dashboard.tls (certFile, keyFile), or bind it to 127.0.0.1 and reach it through an SSH tunnel; dashboard.insecureAllowPlainHttp: true accepts plain HTTP knowingly`,
  };
}

/** The Host header's name part, lower case, without the port (`[::1]:8080` → `::1`). */
export function hostName(header: string): string {
  const trimmed = header.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(trimmed);
  if (bracketed !== null) return bracketed[1] ?? "";
  const colon = trimmed.lastIndexOf(":");
  return colon > 0 && trimmed.indexOf(":") === colon ? trimmed.slice(0, colon) : trimmed;
}

function portOf(header: string): number | undefined {
  const match = /:(\d+)$/.exec(header.trim());
  return match?.[1] !== undefined && !header.trim().endsWith("]") ? Number(match[1]) : undefined;
}

/** Who the dashboard is: the names it answers to, on its port, and the origins its page runs at. */
export interface DashboardIdentity {
  /** Lower-case host names (no port). */
  readonly names: ReadonlySet<string>;
  readonly port: number;
  readonly tls: boolean;
  /** allowedHosts: names a reverse proxy sends, on whatever port it serves. */
  readonly proxied: ReadonlySet<string>;
}

export function identityOf(config: Pick<DashboardConfig, "host" | "allowedHosts">, port: number, tls: boolean): DashboardIdentity {
  const names = new Set<string>([config.host.toLowerCase().replace(/^\[(.*)\]$/, "$1")]);
  if (isLoopback(config.host)) for (const name of ["127.0.0.1", "localhost", "::1"]) names.add(name);
  return { names, port, tls, proxied: new Set(config.allowedHosts.map((name) => name.toLowerCase())) };
}

/** Whether a Host header names the dashboard itself: its own name on its own port, or a name allowedHosts lists. */
export function hostAllowed(header: string | undefined, identity: DashboardIdentity): boolean {
  if (header === undefined || header === "") return false;
  const name = hostName(header);
  if (identity.proxied.has(name)) return true;
  return identity.names.has(name) && portOf(header) === identity.port;
}

/** Whether an Origin header is the dashboard's own page: its scheme, a name it answers to, its port. */
export function originAllowed(origin: string, identity: DashboardIdentity): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (origin === "null") return false;
  const name = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (identity.proxied.has(name)) return true;
  const scheme = identity.tls ? "https:" : "http:";
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  return url.protocol === scheme && identity.names.has(name) && port === identity.port;
}

export interface RequestFacts {
  readonly method: string;
  readonly host: string | undefined;
  readonly origin: string | undefined;
  /** The browser's Sec-Fetch-Site, when it sends one. */
  readonly fetchSite: string | undefined;
}

export type Admission =
  { readonly ok: true } | { readonly ok: false; readonly status: number; readonly reasonCode: "host" | "origin"; readonly reason: string };

const SAFE_METHODS = new Set(["GET", "HEAD"]);

/**
 * Before anything else, every request: a Host that is not the dashboard's own is refused (DNS
 * rebinding: a page elsewhere whose name now points here), and so is a foreign Origin or a
 * cross-site fetch (CSRF). A request that changes anything must carry its Origin: a browser sends
 * one on every POST, so one without it is no page of the dashboard's.
 */
export function admitRequest(facts: RequestFacts, identity: DashboardIdentity): Admission {
  if (!hostAllowed(facts.host, identity)) {
    return { ok: false, status: 421, reasonCode: "host", reason: "the request's Host is not the dashboard's own (DNS rebinding is refused)" };
  }
  if (facts.origin !== undefined && !originAllowed(facts.origin, identity)) {
    return { ok: false, status: 403, reasonCode: "origin", reason: "the request comes from another origin (cross-origin requests are refused)" };
  }
  if (facts.fetchSite !== undefined && facts.fetchSite !== "same-origin" && facts.fetchSite !== "none") {
    return {
      ok: false,
      status: 403,
      reasonCode: "origin",
      reason: `the browser says the request is ${facts.fetchSite} (only the dashboard's own page may call it)`,
    };
  }
  if (!SAFE_METHODS.has(facts.method.toUpperCase()) && facts.origin === undefined) {
    return { ok: false, status: 403, reasonCode: "origin", reason: "a request that acts must carry the Origin header of the dashboard's page" };
  }
  return { ok: true };
}

/** The cookies of a Cookie header, first of each name kept. */
export function parseCookies(header: string | undefined): ReadonlyMap<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at <= 0) continue;
    const name = part.slice(0, at).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(at + 1).trim());
  }
  return cookies;
}

/** The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Secure over TLS. */
export function sessionCookie(value: string, maxAgeSeconds: number, tls: boolean): string {
  return `${COOKIE_NAME}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}${tls ? "; Secure" : ""}`;
}

function digest(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** 32 random bytes, URL-safe. */
export function newSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * The one-time logins and the sessions they opened, by the SHA-256 of their secret (a lookup by
 * hash compares no secret byte by byte). A login is spent by its first use; a session lasts its
 * hours; the oldest of either goes when their bound is reached. In memory: a restart logs out.
 */
export class LoginBook {
  private readonly logins = new Map<string, number>();
  private readonly sessions = new Map<string, number>();

  constructor(private readonly sessionMs: number) {}

  /** A fresh login token, valid LOGIN_TTL_MS from `now`. */
  issue(now: number, secret: string = newSecret()): { readonly token: string; readonly expiresAt: number } {
    this.sweep(now);
    bounded(this.logins, LOGINS_MAX);
    const expiresAt = now + LOGIN_TTL_MS;
    this.logins.set(digest(secret), expiresAt);
    return { token: secret, expiresAt };
  }

  /** Spends a login token: a session secret for the cookie, or undefined when the token is unknown, spent or expired. */
  redeem(token: string, now: number, secret: string = newSecret()): { readonly session: string; readonly expiresAt: number } | undefined {
    this.sweep(now);
    const key = digest(token);
    const until = this.logins.get(key);
    this.logins.delete(key);
    if (until === undefined || until <= now) return undefined;
    bounded(this.sessions, SESSIONS_MAX);
    const expiresAt = now + this.sessionMs;
    this.sessions.set(digest(secret), expiresAt);
    return { session: secret, expiresAt };
  }

  /** Whether a cookie's value is a live session. */
  valid(session: string | undefined, now: number): boolean {
    if (session === undefined || session === "") return false;
    const until = this.sessions.get(digest(session));
    return until !== undefined && until > now;
  }

  private sweep(now: number): void {
    for (const book of [this.logins, this.sessions]) for (const [key, until] of book) if (until <= now) book.delete(key);
  }
}

function bounded(book: Map<string, number>, max: number): void {
  while (book.size >= max) {
    const oldest = book.keys().next().value;
    if (oldest === undefined) return;
    book.delete(oldest);
  }
}
