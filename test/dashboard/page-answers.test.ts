import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PAGE_ANSWERS, PAGE_ANSWER_SCHEMA_FILE, leanSchema, pageAnswerSchemasModule } from "../../src/dashboard/answer-schemas.js";
import type { PageAnswerName, PageAnswers } from "../../src/dashboard/answer-schemas.js";
import { RESPONSE_SCHEMAS } from "../../src/dashboard/schemas.js";
import { AnswerError, parseAnswer } from "../../src/dashboard/page/answers.js";
import { departure } from "../../src/dashboard/page/check.js";

const AT = "2026-01-01T00:00:00.000Z";

/** A good answer of each kind the page reads, every nullable part filled in (so each of its fields can be spoiled). */
const GOOD: { [K in PageAnswerName]: PageAnswers[K] } = {
  me: { operator: "alice", readOnly: false, actions: ["start", "approve"] },
  items: {
    items: [
      {
        ref: "local:demo#1",
        title: "Fix the thing",
        url: "https://example.com/1",
        column: "working",
        session: {
          status: "active",
          harness: "claude",
          tmuxTarget: "loop-x",
          createdAt: AT,
          lastEventAt: AT,
          closeReason: "done",
          question: { text: "which?", askedAt: AT },
        },
        graph: { name: "adhoc", node: "review", phase: "review", status: "waiting", generation: 2, updatedAt: AT },
        control: { command: "pause", source: "dashboard", actor: "alice", requestedAt: AT, cleared: false },
        queue: { position: 1, queuedAt: AT, harness: "codex" },
        budget: {
          tokens: { used: 1200, limit: 100000 },
          minutes: { used: 3.5, limit: 240 },
          warnAt: 0.8,
          exceeded: { dimension: "tokens", used: 100001, limit: 100000, at: AT },
        },
        lastActivity: AT,
      },
    ],
    problems: [{ file: "sessions/x.json", message: "unreadable" }],
  },
  why: {
    ref: "local:demo#1",
    verdict: { state: "at-gate", summary: "waits at review", next: "approve it", lastRefusal: "no" },
    usage: { tokens: 1200, unreadable: "n/a", minutes: 3, limits: { tokens: 100000, minutes: 240 }, text: "1,200/100,000 tok, 3/240 min" },
    timeline: [{ ts: AT, event: "graph.entered", level: "info", text: "entered review" }],
  },
  graph: {
    ref: "local:demo#1",
    run: {
      graph: "adhoc",
      node: "review",
      phase: "review",
      status: "waiting",
      generation: 1,
      reason_code: "gate",
      reason: "a person decides",
      started_at: AT,
      updated_at: AT,
      history: [{ at: AT, kind: "entered", node: "review", extra: 1 }],
    },
    graph: {
      name: "adhoc",
      start: "write",
      nodes: [{ id: "review", phase: "review", actor: "human", terminal: false, description: "a person reviews" }],
      edges: [{ from: "write", to: "review", on: "done" }],
      mermaid: "flowchart TD",
    },
  },
  comments: { comments: [{ id: "1", author: "alice", createdAt: AT, body: "looks good", fromTheLoop: true, url: "https://example.com/c/1" }] },
  screen: { cols: 80, rows: 24, text: "hello\r\nworld" },
  events: { events: [{ ts: AT, source: "daemon", event: "session.spawned", level: "info", work_item: "local:demo#1" }], complete: true },
};

const NAMES = Object.keys(PAGE_ANSWERS) as PageAnswerName[];

type Path = readonly (string | number)[];

/** Every place in `value` with a value, depth first. */
function places(value: unknown, path: Path = []): Path[] {
  const here = path.length > 0 ? [path] : [];
  if (Array.isArray(value)) return [...here, ...value.flatMap((entry, index) => places(entry, [...path, index]))];
  if (typeof value === "object" && value !== null) return [...here, ...Object.entries(value).flatMap(([key, entry]) => places(entry, [...path, key]))];
  return here;
}

function objects(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((entry, index) => objects(entry, [...path, index]));
  if (typeof value === "object" && value !== null) return [path, ...Object.entries(value).flatMap(([key, entry]) => objects(entry, [...path, key]))];
  return [];
}

/** A copy of `value` with `change` applied to the object holding the place `path` names. */
function spoiled(value: unknown, path: Path, change: (holder: Record<string | number, unknown>, key: string | number) => void): unknown {
  const copy: unknown = structuredClone(value);
  let holder = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) holder = holder[key] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last !== undefined) change(holder, last);
  return copy;
}

/** A value of another JSON type than `value`'s. */
function wrongTypeFor(value: unknown): unknown {
  if (typeof value === "string") return 7;
  if (typeof value === "number") return Number.isInteger(value) ? 1.5 : "7";
  if (typeof value === "boolean") return "true";
  if (value === null) return 7;
  if (Array.isArray(value)) return { 0: value[0] };
  return [value];
}

interface Case {
  readonly name: PageAnswerName;
  readonly change: string;
  readonly value: unknown;
}

/** Each good answer spoiled one way at a time: each field of the wrong type, each field gone, an unknown field in each object, null in each place. */
function spoilings(): Case[] {
  return NAMES.flatMap((name) => {
    const good: unknown = GOOD[name];
    const at = (path: Path) => `${name} ${path.join(".")}`;
    return [
      ...places(good).flatMap((path) => [
        { name, change: `${at(path)} of the wrong type`, value: spoiled(good, path, (holder, key) => (holder[key] = wrongTypeFor(holder[key]))) },
        { name, change: `${at(path)} null`, value: spoiled(good, path, (holder, key) => (holder[key] = null)) },
        ...(typeof path.at(-1) === "string" ? [{ name, change: `${at(path)} gone`, value: spoiled(good, path, (holder, key) => delete holder[key]) }] : []),
      ]),
      ...objects(good).map((path) => ({
        name,
        change: `${at(path)} with an unknown field`,
        value: path.length === 0 ? { ...(good as object), surprise: 1 } : spoiled(good, [...path, "surprise"], (holder, key) => (holder[key] = 1)),
      })),
      { name, change: `${name}: not an object`, value: "<html>" },
    ];
  });
}

describe("the page's answer checker agrees with the API's own schemas", () => {
  it.each(NAMES)("a good %s answer fits", (name) => {
    expect(RESPONSE_SCHEMAS[PAGE_ANSWERS[name]].safeParse(GOOD[name]).success).toBe(true);
    expect(departure(JSON.parse(JSON.stringify(leanSchema(z.toJSONSchema(RESPONSE_SCHEMAS[PAGE_ANSWERS[name]])))), GOOD[name])).toBeNull();
    expect(parseAnswer(name, GOOD[name])).toEqual(GOOD[name]);
  });

  const cases = spoilings();
  it(`accepts and refuses each of ${cases.length} spoiled answers as zod does`, () => {
    const disagreements = cases.flatMap(({ name, change, value }) => {
      const zod = RESPONSE_SCHEMAS[PAGE_ANSWERS[name]].safeParse(value).success;
      let page = true;
      try {
        parseAnswer(name, value);
      } catch (error) {
        expect(error).toBeInstanceOf(AnswerError);
        page = false;
      }
      return zod === page ? [] : [`${change}: zod ${zod ? "accepts" : "refuses"}, the page ${page ? "accepts" : "refuses"}`];
    });
    expect(disagreements).toEqual([]);
    // Most spoilings are refusals: the table is no table of look-alikes.
    expect(cases.filter(({ name, value }) => !RESPONSE_SCHEMAS[PAGE_ANSWERS[name]].safeParse(value).success).length).toBeGreaterThan(cases.length * 0.6);
  });
});

describe("what the page says about an answer it cannot read", () => {
  const items = GOOD.items.items[0];
  it.each<[string, PageAnswerName, unknown, string]>([
    ["a field gone", "me", { operator: null, readOnly: true }, "actions: missing"],
    ["the wrong type", "me", { operator: null, readOnly: "no", actions: [] }, 'readOnly: expected boolean, got "no"'],
    [
      "an unknown column",
      "items",
      { items: [{ ...items, column: "later" }], problems: [] },
      'items[0].column: expected one of "queued", "working", "waiting", "blocked", "done", got "later"',
    ],
    [
      "a nullable object spoiled inside",
      "items",
      { items: [{ ...items, queue: { position: 0, queuedAt: AT, harness: "x" } }], problems: [] },
      "items[0].queue.position: expected at least 1, got 0",
    ],
    ["null where a value must be", "screen", { cols: null, rows: 24, text: "" }, "cols: expected integer, got null"],
    ["a fraction where a count must be", "screen", { cols: 80.5, rows: 24, text: "" }, "cols: expected integer, got 80.5"],
    ["an unknown field", "screen", { cols: 80, rows: 24, text: "", html: "<b>" }, "html: not expected here"],
    ["no object at all", "events", "<!doctype html>", 'the answer: expected object, got "<!doctype html>"'],
    ["an entry of the wrong kind", "comments", { comments: ["hello"] }, 'comments[0]: expected object, got "hello"'],
    [
      "an actor not agent or human",
      "graph",
      { ...GOOD.graph, graph: { ...GOOD.graph.graph, nodes: [{ id: "x", phase: null, actor: "robot", terminal: false, description: "" }] } },
      'graph.nodes[0].actor: expected one of "agent", "human", got "robot"',
    ],
  ])("%s", (_what, name, value, problem) => {
    expect(() => parseAnswer(name, value)).toThrow(problem);
    expect(() => parseAnswer(name, value)).toThrow(`The daemon's answer to ${PAGE_ANSWERS[name].split(" (")[0]} is not the shape this page reads`);
  });
});

describe("the page's generated answer schemas", () => {
  it("are up to date with src/dashboard/schemas.ts", async () => {
    expect(await readFile(PAGE_ANSWER_SCHEMA_FILE, "utf8"), "stale generated file: run `npm run generate` and commit the result").toBe(
      pageAnswerSchemasModule(),
    );
  });

  it("refuse a keyword the page's checker would not enforce, naming it", () => {
    expect(() => leanSchema(z.toJSONSchema(z.strictObject({ name: z.string().regex(/^a/) })))).toThrow(
      /properties\/name: the dashboard page's checker does not enforce "pattern"/,
    );
  });

  it("leave out what only a reader needs", () => {
    expect(leanSchema(z.toJSONSchema(z.strictObject({ name: z.string().describe("its name") })))).toEqual({
      type: "object",
      properties: { name: { type: "string" } },
      required: ["name"],
      additionalProperties: false,
    });
  });
});
