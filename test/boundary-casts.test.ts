import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * No `as` cast on data that came from another process or a file: what `JSON.parse`, a YAML
 * parse or `readFileSync` returns is parsed with a schema (or checked by a type guard) before it
 * is used as a type. This guard reads `src/` and fails on a read result cast straight to a type
 * (`JSON.parse(text) as Foo`, `(yaml.parse(text) as { hooks?: unknown })`). Widening to
 * `unknown` is no cast of the data and is allowed.
 *
 * It also fails on what another process hands over read through a property and cast: a
 * response's `.headers` (or one header), a response's or a parse result's `.data`, a socket
 * reply's `.result`, an environment variable (`process.env.X`, or `env.X` / `env["X"]` of an `env`
 * handed in; not another object's `.env`, which is ours) — `response.data as Issue`,
 * `parsed.data.result as T`, `headers["link"] as string`.
 *
 * The dashboard's page (src/dashboard/page/, `.tsx` too) is held to the same: what `fetch` answers
 * (`response.json()`) and what an EventSource message carries (`message.data`) is checked against
 * its route's schema, never cast (`(await response.json()) as T`).
 *
 * Where a cast is truly justified, the line (or the line above it) says why with a comment
 * `boundary-cast: <reason>`; the reason must not be empty.
 */

const SRC = fileURLToPath(new URL("../src", import.meta.url));
const READERS = ["JSON.parse(", "readFileSync(", "yaml.parse(", "parseYaml(", ".json("];
const ALLOW = /boundary-cast:\s*\S/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") || entry.name.endsWith(".tsx") ? [path] : [];
  });
}

/** The index just past the parenthesis closing the one opened before `open`, or -1. */
function closing(text: string, open: number): number {
  let depth = 1;
  let quote: string | undefined;
  for (let index = open; index < text.length; index += 1) {
    const char = text[index];
    if (quote !== undefined) {
      if (char === "\\") index += 1;
      else if (char === quote) quote = undefined;
      continue;
    }
    if (char === '"' || char === "'" || char === "`") quote = char;
    else if (char === "(") depth += 1;
    else if (char === ")" && --depth === 0) return index + 1;
  }
  return -1;
}

interface CastFinding {
  readonly line: number;
  readonly text: string;
}

/**
 * A property another process's answer arrives in, read (optionally indexed, optionally closed by
 * a parenthesis) and cast: `.headers`, `.headers["etag"]`, `.data`, `.result`, `env.TOKEN`, `env["X"]`.
 */
const PROPERTY_CAST =
  /(?:\.headers(?:\??\.?\[[^\]\n]*\])?|\.data(?:\??\.result)?|\.result|(?:(?<![\w$.])|(?<=(?<![\w$.])process\.))env(?:\??\.[A-Za-z_$][\w$]*|\??\.?\[[^\]\n]*\]))\)*\s*as\s+(?!unknown\b|const\b)[\w{[(]/g;

/** Each read result in `text` cast to a type, with its line (1-based), unless the line allows it. */
function castsIn(text: string): CastFinding[] {
  const lines = text.split("\n");
  const findings: CastFinding[] = [];
  for (const match of text.matchAll(PROPERTY_CAST)) {
    const line = text.slice(0, match.index).split("\n").length;
    const here = lines[line - 1] ?? "";
    const above = lines[line - 2] ?? "";
    if (ALLOW.test(here) || ALLOW.test(above) || findings.some((finding) => finding.line === line)) continue;
    findings.push({ line, text: here.trim() });
  }
  for (const reader of READERS) {
    for (let at = text.indexOf(reader); at >= 0; at = text.indexOf(reader, at + reader.length)) {
      // `JSON.parse(` inside `myJSON.parse(`, or any reader inside a longer name, is another function
      // (a method, `.json(`, is read on whatever object it is called on).
      if (!reader.startsWith(".") && /[\w$]/.test(text[at - 1] ?? "")) continue;
      const end = closing(text, at + reader.length);
      if (end < 0) continue;
      const after = /^[\s)]*as\s+([\w{[(]+)/.exec(text.slice(end));
      if (after === null || after[1] === "unknown" || after[1] === "const") continue;
      const line = text.slice(0, at).split("\n").length;
      const here = lines[line - 1] ?? "";
      const above = lines[line - 2] ?? "";
      if (ALLOW.test(here) || ALLOW.test(above) || findings.some((finding) => finding.line === line)) continue;
      findings.push({ line, text: here.trim() });
    }
  }
  return findings.sort((left, right) => left.line - right.line);
}

describe("the guard itself", () => {
  it.each<[string, number]>([
    ["const entry = JSON.parse(readFileSync(file, 'utf8')) as Partial<CacheEntry>;", 1],
    ["return (JSON.parse(text) as { version: string }).version;", 1],
    ["raw = (yaml.parse(text) as { hooks?: unknown } | null)?.hooks;", 1],
    ["const text = readFileSync(path) as Buffer;", 1],
    ["return JSON.parse(line) as unknown;", 0],
    ["const value: unknown = JSON.parse(text);", 0],
    ["const parsed = schema.safeParse(JSON.parse(text));", 0],
    ['const x = JSON.parse(text.replace(")", "")) as Foo;', 1],
    ["// boundary-cast: checked by isFoo on the next line\nconst x = JSON.parse(text) as Foo;", 0],
    ["// boundary-cast:\nconst x = JSON.parse(text) as Foo;", 1],
    // What came back through a property of an answer:
    ["const headers = response.headers as Record<string, unknown>;", 1],
    ['next = nextLink(headerOf(page.headers as Record<string, unknown>, "link"));', 1],
    ['const link = response.headers["link"] as string;', 1],
    ['const link = error.response?.headers?.["link"] as string | undefined;', 1],
    ["return response.data as T;", 1],
    ["return { data: response.data as T, etag };", 1],
    ["return result.data as FeedCursor;", 1],
    ["resolve(parsed.data.result as T);", 1],
    ["const token = process.env.GH_TOKEN as string;", 1],
    ['const token = env["GH_TOKEN"] as string;', 1],
    ['argv.push("--setenv", name, request.env[name] as string);', 0],
    ["const data: unknown = response.data;", 0],
    ["const headers = response.headers as unknown;", 0],
    ["return parsed.data;", 0],
    ["const metadata = other as Foo;", 0],
    ["const update = record.updated as Date;", 0],
    ["// boundary-cast: octokit's typed route\nreturn response.data as T;", 0],
    // What the dashboard's page reads from fetch and from an EventSource:
    ["return (await response.json()) as T;", 1],
    ["const body = (await response.json()) as { error?: unknown };", 1],
    ["parsed = (await response.json()) as Record<string, unknown>;", 1],
    ["const body: unknown = await response.json();", 0],
    ["screen = JSON.parse((message as MessageEvent<string>).data) as Screen;", 1],
    ["const screen = (message as MessageEvent<string>).data as Screen;", 1],
    ["return parseAnswer(name, await response.json());", 0],
  ])("finds %j: %i", (text, count) => {
    expect(castsIn(text)).toHaveLength(count);
  });
});

describe("src/", () => {
  it("reads the dashboard's page too", () => {
    expect(sourceFiles(SRC).map((file) => relative(SRC, file))).toEqual(expect.arrayContaining(["dashboard/page/api.ts", "dashboard/page/terminal.tsx"]));
  });

  it("casts no value read from a file or another process", () => {
    const findings = sourceFiles(SRC).flatMap((file) =>
      castsIn(readFileSync(file, "utf8")).map((finding) => `${relative(SRC, file)}:${finding.line}: ${finding.text}`),
    );
    expect(findings, "parse these with a schema (zod), or check them with a type guard, instead of casting").toEqual([]);
  });
});
