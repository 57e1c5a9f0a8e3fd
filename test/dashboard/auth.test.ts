import { describe, expect, it } from "vitest";
import {
  COOKIE_NAME,
  LOGIN_TTL_MS,
  LoginBook,
  admitRequest,
  bindDecision,
  hostAllowed,
  identityOf,
  isLoopback,
  originAllowed,
  parseCookies,
  sessionCookie,
} from "../../src/dashboard/auth.js";

const loopback = identityOf({ host: "127.0.0.1", allowedHosts: [] }, 4100, false);
const public_ = identityOf({ host: "10.0.0.5", allowedHosts: ["loop.example.com"] }, 8443, true);

describe("where the dashboard may listen", () => {
  it.each([
    [
      { host: "127.0.0.1", insecureAllowPlainHttp: false },
      { ok: true, tls: false },
    ],
    [
      { host: "::1", insecureAllowPlainHttp: false },
      { ok: true, tls: false },
    ],
    [
      { host: "localhost", insecureAllowPlainHttp: false },
      { ok: true, tls: false },
    ],
    [
      { host: "0.0.0.0", insecureAllowPlainHttp: false },
      { ok: false, reason: expect.stringMatching(/not loopback, without TLS: set dashboard.tls/) },
    ],
    [
      { host: "0.0.0.0", tls: { certFile: "c.pem", keyFile: "k.pem" }, insecureAllowPlainHttp: false },
      { ok: true, tls: true },
    ],
    [
      { host: "192.168.1.2", insecureAllowPlainHttp: true },
      { ok: true, tls: false, warning: expect.stringMatching(/unencrypted/) },
    ],
  ] as const)("%o → %o", (config, decision) => {
    expect(bindDecision(config)).toEqual(decision);
  });

  it.each([
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["[::1]", true],
    ["localhost", true],
    ["0.0.0.0", false],
    ["10.0.0.5", false],
    ["localhost.evil.com", false],
  ])("%s is loopback: %s", (host, loop) => {
    expect(isLoopback(host)).toBe(loop);
  });
});

describe("the Host and Origin the dashboard answers (DNS rebinding, CSRF)", () => {
  it.each([
    ["127.0.0.1:4100", loopback, true],
    ["localhost:4100", loopback, true],
    ["[::1]:4100", loopback, true],
    ["LOCALHOST:4100", loopback, true],
    ["127.0.0.1:4101", loopback, false],
    ["127.0.0.1", loopback, false],
    ["evil.example.com:4100", loopback, false],
    ["", loopback, false],
    [undefined, loopback, false],
    ["10.0.0.5:8443", public_, true],
    ["loop.example.com", public_, true],
    ["loop.example.com:443", public_, true],
    ["localhost:8443", public_, false],
  ] as const)("Host %s → %s", (host, identity, allowed) => {
    expect(hostAllowed(host, identity)).toBe(allowed);
  });

  it.each([
    ["http://127.0.0.1:4100", loopback, true],
    ["http://localhost:4100", loopback, true],
    ["https://127.0.0.1:4100", loopback, false],
    ["http://127.0.0.1:4101", loopback, false],
    ["http://evil.example.com", loopback, false],
    ["null", loopback, false],
    ["not a url", loopback, false],
    ["https://10.0.0.5:8443", public_, true],
    ["http://10.0.0.5:8443", public_, false],
    ["https://loop.example.com", public_, true],
  ] as const)("Origin %s → %s", (origin, identity, allowed) => {
    expect(originAllowed(origin, identity)).toBe(allowed);
  });

  const facts = (method: string, more: { host?: string; origin?: string; fetchSite?: string } = {}) => ({
    method,
    host: "127.0.0.1:4100",
    origin: undefined,
    fetchSite: undefined,
    ...more,
  });
  it.each([
    [facts("GET"), { ok: true }],
    [facts("GET", { origin: "http://127.0.0.1:4100", fetchSite: "same-origin" }), { ok: true }],
    [facts("GET", { fetchSite: "none" }), { ok: true }],
    [facts("GET", { host: "rebound.example.com:4100" }), { ok: false, status: 421, reasonCode: "host" }],
    [facts("GET", { origin: "http://evil.example.com" }), { ok: false, status: 403, reasonCode: "origin" }],
    [facts("GET", { fetchSite: "cross-site" }), { ok: false, status: 403, reasonCode: "origin" }],
    [facts("POST", { origin: "http://127.0.0.1:4100" }), { ok: true }],
    [facts("POST"), { ok: false, status: 403, reasonCode: "origin" }],
    [facts("POST", { origin: "http://evil.example.com" }), { ok: false, status: 403, reasonCode: "origin" }],
    [facts("POST", { origin: "http://127.0.0.1:4100", fetchSite: "same-site" }), { ok: false, status: 403, reasonCode: "origin" }],
  ] as const)("%o → %o", (request, admission) => {
    expect(admitRequest(request, loopback)).toMatchObject(admission);
  });
});

describe("the session cookie", () => {
  it("is HttpOnly and SameSite=Strict, Secure over TLS only", () => {
    expect(sessionCookie("abc", 3600, false)).toBe(`${COOKIE_NAME}=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=3600`);
    expect(sessionCookie("abc", 3600.7, true)).toBe(`${COOKIE_NAME}=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=3600; Secure`);
  });

  it("is read from a Cookie header, the first of a name winning", () => {
    const cookies = parseCookies(`other=1; ${COOKIE_NAME}=first; ${COOKIE_NAME}=second;broken`);
    expect(cookies.get(COOKIE_NAME)).toBe("first");
    expect(cookies.get("other")).toBe("1");
    expect(parseCookies(undefined).size).toBe(0);
  });
});

describe("one-time logins and the sessions they open", () => {
  it("spends a login at its first use, and its session lasts its hours", () => {
    const book = new LoginBook(60_000);
    const { token, expiresAt } = book.issue(1_000);
    expect(expiresAt).toBe(1_000 + LOGIN_TTL_MS);
    const opened = book.redeem(token, 2_000);
    expect(opened).toBeDefined();
    expect(book.redeem(token, 2_001)).toBeUndefined();
    expect(book.valid(opened?.session, 61_999)).toBe(true);
    expect(book.valid(opened?.session, 62_000)).toBe(false);
    expect(book.valid(token, 2_000)).toBe(false);
    expect(book.valid(undefined, 2_000)).toBe(false);
    expect(book.valid("", 2_000)).toBe(false);
  });

  it("refuses a login past its time, and an unknown one", () => {
    const book = new LoginBook(60_000);
    const { token } = book.issue(0);
    expect(book.redeem(token, LOGIN_TTL_MS)).toBeUndefined();
    expect(book.redeem("guessed", 1)).toBeUndefined();
  });

  it("keeps no more than its bound of logins: the oldest goes", () => {
    const book = new LoginBook(60_000);
    const first = book.issue(0).token;
    for (let i = 0; i < 40; i += 1) book.issue(0);
    expect(book.redeem(first, 1)).toBeUndefined();
  });
});
