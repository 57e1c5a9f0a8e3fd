import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { checkAgainstSchemas, checkGitHubPayload, isGitHubWebUrl } from "../../src/ingress/github-payloads.js";
import type { RoutedGitHubEvent } from "../../src/ingress/github-payloads.js";

/**
 * checkGitHubPayload answers a payload that fits from hand-written checks and leaves the rest to
 * the zod schemas: it must answer every payload exactly as the schemas alone do — never accept
 * what they refuse, and refuse with their reason. Compared over GitHub's own examples and many
 * seeded variations of them (fields removed, or replaced by values of other types and shapes).
 */

interface Example {
  readonly name: RoutedGitHubEvent;
  readonly payload: Record<string, unknown>;
}

const EXAMPLES = (JSON.parse(readFileSync(new URL("./fixtures/github-webhook-examples.json", import.meta.url), "utf8")) as { examples: Example[] }).examples;

const HOSTS = ["github.com", "ghe.example.com", "localhost:8080", "127.0.0.1:3000"];

// Values a field may take in a payload that is not what GitHub sends, including near misses.
const ODD_VALUES: readonly unknown[] = [
  null,
  undefined,
  "",
  "x",
  0,
  -1,
  -0,
  1.5,
  42,
  2 ** 60,
  Number.POSITIVE_INFINITY,
  true,
  false,
  [],
  {},
  [1],
  [{ name: "" }],
  { name: "" },
  { login: 5 },
  { full_name: 7 },
  "open",
  "closed",
  "https://evil.example/x",
  "https://github.com/octo/repo",
  "http://github.com/octo/repo",
  "https://GitHub.com/octo/repo",
  "https://github.com:443/octo/repo",
  "https://u:p@github.com/octo/repo",
  "javascript:alert(1)",
  "https://ghe.example.com/octo/repo",
  "http://localhost:8080/octo/repo",
];

/** A small seeded generator, so a failure names a case that comes back. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

function fieldPaths(value: unknown, prefix: readonly string[] = [], into: string[][] = []): string[][] {
  if (typeof value !== "object" || value === null) return into;
  for (const key of Object.keys(value)) {
    const path = [...prefix, key];
    into.push(path);
    if (path.length < 4) fieldPaths((value as Record<string, unknown>)[key], path, into);
  }
  return into;
}

function varied(payload: Record<string, unknown>, random: () => number): Record<string, unknown> {
  const copy = structuredClone(payload);
  const paths = fieldPaths(copy);
  const changes = 1 + Math.floor(random() * 3);
  for (let change = 0; change < changes; change++) {
    const path = paths[Math.floor(random() * paths.length)];
    if (path === undefined) continue;
    let holder: unknown = copy;
    for (const key of path.slice(0, -1)) holder = typeof holder === "object" && holder !== null ? (holder as Record<string, unknown>)[key] : undefined;
    if (typeof holder !== "object" || holder === null) continue;
    const target = holder as Record<string, unknown>;
    const key = path[path.length - 1] ?? "";
    if (random() < 0.25) delete target[key];
    // A copy: a later change may reach into the value it put there.
    else target[key] = structuredClone(ODD_VALUES[Math.floor(random() * ODD_VALUES.length)]);
  }
  return copy;
}

describe("checkGitHubPayload", () => {
  let accepted = 0;
  let refused = 0;

  it("answers GitHub's own examples as the schemas do", () => {
    for (const example of EXAMPLES) {
      for (const host of HOSTS) {
        expect(checkGitHubPayload(example.name, example.payload, host)).toEqual(checkAgainstSchemas(example.name, example.payload, host));
      }
    }
  });

  // One test per example, so that no single test holds the whole comparison.
  it.each(EXAMPLES.map((example, index) => [`${example.name}.${String(example.payload.action)} #${index}`, example, index] as const))(
    "answers variations of %s as the schemas do: the same refusals, with the same reasons",
    (_name, example, index) => {
      const random = generator(20_261_201 + index);
      for (let round = 0; round < 16; round++) {
        const payload = varied(example.payload, random);
        for (const host of HOSTS) {
          const expected = checkAgainstSchemas(example.name, payload, host);
          const answer = checkGitHubPayload(example.name, payload, host);
          // The payload is printed only for a case that differs.
          if (!isDeepStrictEqual(answer, expected)) expect(answer, `${example.name} on ${host}: ${JSON.stringify(payload)}`).toEqual(expected);
          if (expected.ok) accepted++;
          else refused++;
        }
      }
    },
  );

  it("compared both answers often enough to mean something", () => {
    expect(accepted).toBeGreaterThan(200);
    expect(refused).toBeGreaterThan(200);
  });

  it("refuses what is not an object, as the schemas do", () => {
    for (const payload of [null, undefined, "x", 5, [], [{}]]) {
      expect(checkGitHubPayload("issues", payload, "github.com")).toEqual(checkAgainstSchemas("issues", payload, "github.com"));
    }
  });
});

/** The rule, read straight off the parsed URL: what isGitHubWebUrl's shortcut must agree with. */
function parsedIsOnHost(value: string, host: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  const name = host.replace(/:\d+$/, "");
  const loopback = name === "localhost" || name === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(name);
  const schemeOk = url.protocol === "https:" || (url.protocol === "http:" && loopback);
  return schemeOk && url.username === "" && url.password === "" && url.host.toLowerCase() === host;
}

describe("isGitHubWebUrl", () => {
  const hosts = [
    "github.com",
    "ghe.example.com",
    "ghe-1.example.com",
    "localhost",
    "localhost:8080",
    "127.0.0.1:3000",
    "github.com:443",
    "10.0.0.1",
    "xn--bcher-kva.example",
    "a.b1",
  ];
  const paths = ["/octo/repo", "/octo/repo/issues/42#issuecomment-9001", "/x@evil.example/", "/a\\b", "/%zz", "/ a", "/?q", "/\t/"];
  const odd = [
    "",
    "https://",
    "https:///octo",
    "https://@github.com/",
    "https://u:p@github.com/x",
    "https://github.com",
    "https://github.com?x",
    "https://github.com#x",
    "https://GITHUB.COM/x",
    "HTTPS://github.com/x",
    " https://github.com/x",
    "https://github.com.evil.example/x",
    "https://github.com@evil.example/x",
    "https://github.com:443/x",
    "https://github.com:8443/x",
    "javascript:alert(1)",
    "https://github.com\\x",
    "https://git\thub.com/x",
    "https://github.com./x",
  ];

  it("answers as the parsed URL does, for addresses GitHub sends and for near misses", () => {
    for (const host of hosts) {
      const values = [...odd, ...paths.flatMap((path) => [`https://${host}${path}`, `http://${host}${path}`, `https://${host.toUpperCase()}${path}`])];
      for (const value of values) expect(isGitHubWebUrl(value, host), `${value} on ${host}`).toBe(parsedIsOnHost(value, host));
    }
  });
});
