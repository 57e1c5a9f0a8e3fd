import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CONTROL_RECORD_SHAPE_FILE, controlRecordSchema, controlRecordShapeModule } from "../../src/control/record-schema.js";
import { CONTROL_RECENT_DELIVERIES_MAX } from "../../src/control/store.js";
import { SESSION_STATUSES } from "../../src/registry/record.js";
import { SESSION_RECORD_SHAPE_FILE, sessionRecordSchema, sessionRecordShapeModule } from "../../src/registry/record-schema.js";
import { sessionRecordShape } from "../../src/registry/record-shape.js";
import { compileShape, keysGoTogether, recordShapeModuleText } from "../../src/state/index.js";
import type { RecordShape } from "../../src/state/index.js";
import { REPO_ROOT } from "../support/cli.js";

const STALE = "stale generated file: run `npm run generate` and commit the result";

const shapeOf = (schema: z.ZodType): RecordShape => z.toJSONSchema(schema, { io: "input" }) as RecordShape;

describe("the record kinds' generated shapes", () => {
  it.each([
    [SESSION_RECORD_SHAPE_FILE, sessionRecordShapeModule],
    [CONTROL_RECORD_SHAPE_FILE, controlRecordShapeModule],
  ])("%s is current", async (file, module) => {
    expect(await readFile(`${REPO_ROOT}/${file}`, "utf8"), STALE).toBe(module());
  });

  it("hand zod-free code the schema's facts", () => {
    expect(SESSION_STATUSES).toEqual(sessionRecordSchema.shape.status.options);
    expect(CONTROL_RECENT_DELIVERIES_MAX).toBe(50);
    expect(
      controlRecordSchema.safeParse({
        version: 1,
        ref: "local:a#1",
        command: "stop",
        source: "cli",
        actor: "x",
        requestedAt: "2025-03-01T10:00:00Z",
        effect: "noop",
        recentDeliveries: Array(51).fill("d"),
      }).success,
    ).toBe(false);
  });

  it("compile: the session shape agrees with the schema on a record and on what is wrong with one", () => {
    const check = compileShape(sessionRecordShape);
    const record = {
      version: 1,
      workItem: { ref: "local:demo#1", tracker: "local", host: "", repository: "demo", number: 1, kind: "issue", url: "u", id: "1" },
      harness: "claude",
      harnessSessionId: "s",
      cwd: "/w",
      status: "active",
      createdAt: "t",
      lastEventAt: "t",
      tmuxTarget: "loop-x",
      recentDeliveries: ["d1"],
      url: "u",
      pullRequests: [{ ref: "github:o/r#2", source: "branch", linkedAt: "t" }],
      claimedBy: { pid: 42 },
      extra: "kept by a reader that strips it",
    };
    const variants: unknown[] = [
      record,
      { ...record, workItem: { ...record.workItem, number: 0 } },
      { ...record, claimedBy: { pid: 1.5 } },
      { ...record, pullRequests: [{ ref: "", source: "branch", linkedAt: "t" }] },
      { ...record, recentDeliveries: [1] },
      { ...record, workspace: { checkout: "/c", strategy: "copy" } },
      { ...record, awaitingInput: { question: "q" } },
    ];
    for (const value of variants) expect(check(value) === undefined, JSON.stringify(value)).toBe(sessionRecordSchema.safeParse(value).success);
    expect(check(variants[1])).toBe("workItem.number: expected a positive integer; got 0");
    expect(check(variants[3])).toBe('pullRequests.0.ref: expected a non-empty string; got ""');
    expect(check(variants[4])).toBe("recentDeliveries: expected a list of strings; got [1]");
    expect(check(variants[6])).toBe("awaitingInput.askedAt: expected a string; missing");
  });
});

describe("compileShape", () => {
  const check = compileShape(
    shapeOf(
      keysGoTogether(
        z.strictObject({
          version: z.literal(2),
          name: z.string().min(1),
          mode: z.enum(["a", "b"]),
          at: z.iso.datetime(),
          count: z.number().int().nonnegative().optional(),
          ratio: z.number().optional(),
          flag: z.boolean().optional(),
          code: z
            .string()
            .regex(/^[a-z]+$/)
            .optional(),
          short: z.string().max(3).optional(),
          from: z.string().optional(),
          to: z.string().optional(),
          nested: z.strictObject({ inner: z.string() }).optional(),
        }),
        "from",
        "to",
      ),
    ),
  );
  const valid = { version: 2, name: "n", mode: "a", at: "2025-03-01T10:00:00.000Z" };

  it.each<[string, unknown, string | undefined]>([
    ["a valid value", valid, undefined],
    ["an array", [valid], "not a JSON object"],
    ["an unknown key, before anything else", { ...valid, version: 3, zz: 1 }, 'unknown key "zz"'],
    ["another version", { ...valid, version: 3 }, "version: expected 2; got 3"],
    ["a missing key", { ...valid, name: undefined }, "name: expected a non-empty string; missing"],
    ["a value outside the enum", { ...valid, mode: "c" }, 'mode: expected one of a, b; got "c"'],
    ["a timestamp with an offset", { ...valid, at: "2025-03-01T10:00:00+01:00" }, 'at: expected an ISO 8601 UTC timestamp; got "2025-03-01T10:00:00+01:00"'],
    ["a negative count", { ...valid, count: -1 }, "count: expected a non-negative integer; got -1"],
    ["a fractional count", { ...valid, count: 1.5 }, "count: expected a non-negative integer; got 1.5"],
    ["a string ratio", { ...valid, ratio: "1" }, 'ratio: expected a number; got "1"'],
    ["a string flag", { ...valid, flag: "yes" }, 'flag: expected true or false; got "yes"'],
    ["a code off the pattern", { ...valid, code: "A" }, 'code: expected a string matching /^[a-z]+$/; got "A"'],
    ["a string too long", { ...valid, short: "abcd" }, 'short: expected a string of 0–3 characters; got "abcd"'],
    ["one of two keys that go together", { ...valid, to: "x" }, "from and to go together"],
    ["a nested unknown key", { ...valid, nested: { inner: "i", more: 1 } }, 'nested: unknown key "more"'],
    ["a nested missing key", { ...valid, nested: {} }, "nested.inner: expected a string; missing"],
    ["a nested non-object", { ...valid, nested: 1 }, "nested: expected an object; got 1"],
  ])("%s", (_case, value, problem) => {
    expect(check(value)).toBe(problem);
  });

  it("refuses a shape it does not understand rather than check it less strictly", () => {
    expect(() => compileShape(shapeOf(z.object({ a: z.union([z.string(), z.number()]) })))).toThrow(/the type \["string","number"\] at a/);
    expect(() => compileShape(shapeOf(z.object({ a: z.union([z.object({ b: z.string() }), z.object({ c: z.string() })]) })))).toThrow(/"anyOf" at a/);
    expect(() => compileShape(shapeOf(z.object({ a: z.email() })))).toThrow(/string format "email"/);
    expect(() => compileShape(shapeOf(z.string()))).toThrow(/describes an object/);
  });
});

describe("compileShape: maps (z.record)", () => {
  const schema = z.strictObject({
    counts: z.record(z.string().min(1), z.number().int().positive()),
    modes: z.record(z.string().regex(/^[a-z]+$/), z.enum(["a", "b"])).optional(),
  });
  const check = compileShape(shapeOf(schema));

  it.each<[string, unknown, string | undefined]>([
    ["an empty map", { counts: {} }, undefined],
    ["entries that fit", { counts: { x: 1, y: 2 }, modes: { x: "a" } }, undefined],
    ["a value that does not fit", { counts: { x: 0 } }, "counts.x: expected a positive integer; got 0"],
    ["a key that does not fit", { counts: { "": 1 } }, 'counts: key "": expected a non-empty string; got ""'],
    ["a key off the pattern", { counts: {}, modes: { X: "a" } }, 'modes: key "X": expected a string matching /^[a-z]+$/; got "X"'],
    ["a value outside the enum", { counts: {}, modes: { x: "c" } }, 'modes.x: expected one of a, b; got "c"'],
    ["a list for a map", { counts: [1] }, "counts: expected an object; got [1]"],
  ])("%s (and agrees with the schema)", (_case, value, problem) => {
    expect(check(value)).toBe(problem);
    expect(schema.safeParse(value).success).toBe(problem === undefined);
  });

  it("refuses key names without a value shape", () => {
    expect(() => compileShape({ type: "object", properties: { m: { type: "object", propertyNames: { type: "string" } } } })).toThrow(
      /propertyNames without a value shape at m/,
    );
  });
});

describe("recordShapeModuleText", () => {
  it("writes a module exporting the shape as a constant", () => {
    const text = recordShapeModuleText("demoShape", "demoSchema (somewhere)", { type: "object" });
    expect(text).toContain("Generated by `npm run generate` from demoSchema (somewhere); do not edit.");
    expect(text.endsWith('export const demoShape = {\n  "type": "object"\n} as const;\n')).toBe(true);
  });

  it("writes a part that stands more than once as one named constant, and the module's value is the shape", () => {
    const stamp = { type: "string", format: "date-time", pattern: "^\\d{4}Z$" };
    const name = { type: "string", minLength: 1 };
    const shape = {
      type: "object",
      properties: {
        first: stamp,
        last: stamp,
        owner: { type: "object", properties: { name, since: stamp }, required: ["name"] },
        admin: { type: "object", properties: { name, since: stamp }, required: ["name"] },
        id: name,
        note: { type: "string" },
        also: { type: "string" },
      },
    };
    const text = recordShapeModuleText("demoShape", "demoSchema (somewhere)", shape);
    // Each common part once, before what uses it; a one-entry part stays where it stands.
    expect(text.match(/^const \w+ = /gm)).toEqual(["const nonEmptyString = ", "const isoUtcTimestamp = ", "const ownerShape = "]);
    expect(text).toContain('"first": isoUtcTimestamp,');
    expect(text).toContain('"admin": ownerShape,');
    expect(text).toContain('"name": nonEmptyString,');
    expect(text).toContain('"note": {\n      "type": "string"\n    },');
    const body = text.replace(/ as const;/g, ";").replace("export const", "const");
    expect(new Function(`${body}\nreturn demoShape;`)()).toEqual(shape);
  });

  it("writes a shape with nothing repeated exactly as JSON.stringify does", () => {
    const shape = {
      type: "object",
      properties: { a: { type: "string", minLength: 1 }, b: { type: "array", items: { type: "number" }, minItems: 0 } },
      required: [],
    };
    const text = recordShapeModuleText("demoShape", "demoSchema (somewhere)", shape);
    expect(text.endsWith(`export const demoShape = ${JSON.stringify(shape, null, 2)} as const;\n`)).toBe(true);
  });
});
