import { afterEach, describe, expect, it } from "vitest";
import {
  MIN_SUBSTRING_SECRET,
  REDACTED,
  SecretRedactor,
  forgetKnownSecrets,
  redactKnownSecrets,
  redactKnownSecretsIn,
  rememberSecret,
  secretSpellings,
} from "../src/secrets.js";

/** A token with every character an encoding changes: `+`, `/`, `=`, a quote, a backslash. */
const TOKEN = 's3cr3t+T0k/en="q\\z=';

const json = (text: string): string => JSON.stringify(text).slice(1, -1);
const base64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

afterEach(() => forgetKnownSecrets());

describe("a secret in every spelling it comes back in", () => {
  const redactor = new SecretRedactor();
  redactor.remember(TOKEN);

  it.each([
    ["as is", (token: string) => `Authorization: Bearer ${token} was refused`],
    ["JSON-escaped", (token: string) => `{"error":{"message":"bad token ${json(token)}"}}`],
    ["JSON-escaped twice (a JSON document quoted in a JSON string)", (token: string) => JSON.stringify({ body: JSON.stringify({ token }) })],
    ["JSON-escaped with \\/", (token: string) => `{"token":"${json(token).replaceAll("/", "\\/")}"}`],
    ["URL-encoded (encodeURIComponent)", (token: string) => `https://hooks.example/rpc?token=${encodeURIComponent(token)}&x=1`],
    ["URL-encoded with lower-case hex", (token: string) => `token=${encodeURIComponent(token).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`],
    ["URL-encoded (encodeURI)", (token: string) => `GET ${encodeURI(`https://x.example/${token}`)}`],
    ["form-encoded", (token: string) => new URLSearchParams({ token, other: "y" }).toString()],
    ["base64", (token: string) => `echo ${base64(token)} end`],
    ["base64 without padding", (token: string) => `echo ${base64(token).replace(/=+$/, "")} end`],
    ["base64url", (token: string) => `echo ${base64(token).replaceAll("+", "-").replaceAll("/", "_")} end`],
    ["inside Basic credentials, offset 0", (token: string) => `Authorization: Basic ${base64(`abc${token}`)}`],
    ["inside Basic credentials, offset 1", (token: string) => `Authorization: Basic ${base64(`user:${token}`)}`],
    ["inside Basic credentials, offset 2", (token: string) => `Authorization: Basic ${base64(`x-access-token:${token}`)}`],
    ["twice in one text", (token: string) => `${token} and again ${encodeURIComponent(token)}`],
  ])("%s", (_name, render) => {
    const text = render(TOKEN);
    const redacted = redactor.redact(text);
    expect(redacted).toContain(REDACTED);
    for (const spelling of secretSpellings(TOKEN)) expect(redacted).not.toContain(spelling);
    expect(redactor.redact(render("another-value-entirely"))).toBe(render("another-value-entirely"));
  });

  it("a form-encoded space is a +", () => {
    const spaced = new SecretRedactor();
    spaced.remember("pass phrase with spaces");
    expect(spaced.redact(new URLSearchParams({ secret: "pass phrase with spaces" }).toString())).toBe(`secret=${REDACTED}`);
  });

  it("keeps the text around the secret as it was", () => {
    expect(redactor.redact(`before ${TOKEN} after`)).toBe(`before ${REDACTED} after`);
    expect(redactor.redact(`"${json(TOKEN)}"`)).toBe(`"${REDACTED}"`);
  });

  it("redacts each spelling standing alone, the shortest included", () => {
    const spellings = secretSpellings(TOKEN);
    for (const spelling of spellings) expect(redactor.redact(spelling)).toBe(REDACTED);
    const shortest = spellings.reduce((a, b) => (b.length < a.length ? b : a));
    expect(redactor.redact(shortest.slice(1))).toBe(shortest.slice(1));
  });

  it("leaves text without a secret, and its own marks, alone", () => {
    expect(redactor.redact("nothing to see")).toBe("nothing to see");
    expect(redactor.redact(`${REDACTED} ${REDACTED}`)).toBe(`${REDACTED} ${REDACTED}`);
    expect(redactor.redact("")).toBe("");
  });
});

describe("short values", () => {
  it.each([
    ["hunter2", "hunter2", REDACTED],
    ["hunter2", "the password hunter2s", "the password hunter2s"],
    ["hunter2", "hunter2 is short", "hunter2 is short"],
    ["12345678", "id 123456789", `id ${REDACTED}9`],
  ])("%s in %j", (secret, text, expected) => {
    const redactor = new SecretRedactor();
    redactor.remember(secret);
    expect(redactor.redact(text)).toBe(expected);
  });

  it("no spelling shorter than the substring minimum is ever matched", () => {
    for (const spelling of secretSpellings(TOKEN)) expect(spelling.length).toBeGreaterThanOrEqual(MIN_SUBSTRING_SECRET);
  });
});

describe("several secrets", () => {
  it("redacts each, the longer whole where one contains another", () => {
    const redactor = new SecretRedactor();
    redactor.remember("abcdefgh");
    redactor.remember("abcdefgh-and-more");
    expect(redactor.redact("x abcdefgh-and-more y abcdefgh z")).toBe(`x ${REDACTED} y ${REDACTED} z`);
  });

  it("ignores undefined and the empty string", () => {
    const redactor = new SecretRedactor();
    redactor.remember(undefined);
    redactor.remember("");
    expect(redactor.empty).toBe(true);
    expect(redactor.redact("text")).toBe("text");
  });

  it("keeps the newest values past its bound", () => {
    const redactor = new SecretRedactor();
    for (let index = 0; index < 100; index++) redactor.remember(`secret-value-${String(index).padStart(3, "0")}`);
    expect(redactor.redact("secret-value-099")).toBe(REDACTED);
    expect(redactor.redact("secret-value-000")).toBe("secret-value-000");
  });
});

describe("JSON values", () => {
  it("redacts every string, keys included, and keeps the rest", () => {
    const redactor = new SecretRedactor();
    redactor.remember(TOKEN);
    const value = { note: `reason: ${TOKEN}`, count: 3, flag: true, none: null, list: ["a", encodeURIComponent(TOKEN)], nested: { [TOKEN]: 1 } };
    expect(redactor.redactIn(value)).toEqual({
      note: `reason: ${REDACTED}`,
      count: 3,
      flag: true,
      none: null,
      list: ["a", REDACTED],
      nested: { [REDACTED]: 1 },
    });
    expect(value.note).toBe(`reason: ${TOKEN}`);
  });

  it("returns the value itself while no secret is known", () => {
    const value = { a: "b" };
    expect(new SecretRedactor().redactIn(value)).toBe(value);
  });
});

describe("the process's secrets", () => {
  it("are what was remembered, until forgotten", () => {
    expect(redactKnownSecrets(`x ${TOKEN}`)).toBe(`x ${TOKEN}`);
    rememberSecret(TOKEN);
    expect(redactKnownSecrets(`x ${TOKEN}`)).toBe(`x ${REDACTED}`);
    expect(redactKnownSecretsIn({ a: [base64(TOKEN)] })).toEqual({ a: [REDACTED] });
    forgetKnownSecrets();
    expect(redactKnownSecrets(`x ${TOKEN}`)).toBe(`x ${TOKEN}`);
  });
});
