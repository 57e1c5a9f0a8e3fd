import { cp, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleHash, consentWarnings, disclosureLines } from "../../src/capabilities/consent.js";
import { crossCheck, readBundle } from "../../src/capabilities/load.js";
import type { CapabilityBundle } from "../../src/capabilities/load.js";
import { CAPABILITY_SCHEMA_FILE, capabilityJsonSchemaText, parseManifest, whenHolds } from "../../src/capabilities/manifest.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const EXAMPLE = join(REPO_ROOT, "examples/capabilities/release-notes");

const base = {
  id: "lint-gate",
  version: "1.0.0",
  description: "d",
  commands: [{ name: "lint check", argv: ["node", "lint.mjs"] }],
};

const HOSTILE = ["intel; rm -rf /", "$(id)", "intel\napi", "Intel", "intel  api", "intel api ", "-rf", ""];

describe("capability manifests", () => {
  it("accepts the example bundle's manifest", async () => {
    const outcome = await readBundle(EXAMPLE);
    expect(outcome.problems).toEqual([]);
    expect(outcome.bundle?.manifest.id).toBe("release-notes");
    expect(crossCheck([outcome.bundle as CapabilityBundle])).toEqual([]);
  });

  it.each(HOSTILE.map((value) => ({ field: "commands[0].name", value, manifest: { ...base, commands: [{ name: value, argv: ["x"] }] } })))(
    "refuses $field = $value naming the field",
    ({ field, manifest }) => {
      const { manifest: parsed, problems } = parseManifest(manifest);
      expect(parsed).toBeUndefined();
      expect(problems.some((problem) => problem.startsWith(`${field}: `))).toBe(true);
    },
  );

  // The contract handles a malformed ref.command or check.query at dispatch, not at install.
  const hostileReferences = HOSTILE.flatMap((value) => [
    { field: "steps[0].ref.command", value, manifest: { ...base, steps: [{ point: "plan:pre", ref: { command: value } }] } },
    {
      field: "gates[0].check.query",
      value,
      manifest: { ...base, gates: [{ point: "ship:pre", check: { query: value }, blocking: true, onError: "halt" }] },
    },
  ]);
  it.each(hostileReferences)("installs $field = $value and warns at consent, naming the field", ({ field, manifest }) => {
    const { manifest: parsed, problems } = parseManifest(manifest);
    expect(problems).toEqual([]);
    const warnings = consentWarnings(parsed as NonNullable<typeof parsed>);
    expect(
      warnings.some((warning) => warning.startsWith(`${field} `) && warning.includes("is not a command's words")),
      warnings.join("\n"),
    ).toBe(true);
  });

  const invalid: { what: string; manifest: unknown; field: string }[] = [
    { what: "an uppercase id", manifest: { ...base, id: "Lint" }, field: "id" },
    { what: "an unknown key", manifest: { ...base, hookz: [] }, field: "(manifest)" },
    { what: "an unknown point", manifest: { ...base, steps: [{ point: "execute:task", ref: { skill: "x" } }] }, field: "steps[0].point" },
    { what: "a ref with two kinds", manifest: { ...base, steps: [{ point: "plan:pre", ref: { skill: "a", agent: "b" } }] }, field: "steps[0].ref" },
    { what: "a ref with none", manifest: { ...base, steps: [{ point: "plan:pre", ref: {} }] }, field: "steps[0].ref" },
    {
      what: "a check with two kinds",
      manifest: {
        ...base,
        gates: [{ point: "ship:pre", check: { query: "lint check", agentVerdict: { ref: "a", prompt: "p" } }, blocking: false, onError: "skip", message: "m" }],
      },
      field: "gates[0].check",
    },
    {
      what: "a blocking agentVerdict",
      manifest: {
        ...base,
        gates: [{ point: "ship:pre", check: { agentVerdict: { ref: "reviewer", prompt: "ok?" } }, blocking: true, onError: "skip", message: "m" }],
      },
      field: "gates[0].blocking",
    },
    {
      what: "a predicate that is not an object",
      manifest: { ...base, gates: [{ point: "ship:pre", check: { predicate: "id" }, blocking: true, onError: "skip", message: "m" }] },
      field: "gates[0].check.predicate",
    },
    {
      what: "onError fail",
      manifest: { ...base, gates: [{ point: "ship:pre", check: { query: "lint check" }, blocking: true, onError: "fail", message: "m" }] },
      field: "gates[0].onError",
    },
    {
      what: "a when not in the config",
      manifest: { ...base, steps: [{ point: "plan:pre", ref: { skill: "x" }, when: "lint.enabled" }] },
      field: "steps[0].when",
    },
    {
      what: "a fragment with both",
      manifest: { ...base, contributions: [{ point: "plan:pre", into: "planner", fragment: { path: "a", file: "b" } }] },
      field: "contributions[0].fragment",
    },
    { what: "an empty argv", manifest: { ...base, commands: [{ name: "lint check", argv: [] }] }, field: "commands[0].argv" },
    {
      what: "resolver args without {{id}}",
      manifest: { ...base, taskContentResolver: { trackerPrefix: "beads", invoke: { binary: "bd", args: ["show", "x{{id}}"], timeoutMs: 1000 } } },
      field: "taskContentResolver.invoke.args",
    },
    {
      what: "a resolver timeout over 120 s",
      manifest: { ...base, taskContentResolver: { trackerPrefix: "beads", invoke: { binary: "bd", args: ["{{id}}"], timeoutMs: 120_001 } } },
      field: "taskContentResolver.invoke.timeoutMs",
    },
    { what: "a duplicate command", manifest: { ...base, commands: [...base.commands, ...base.commands] }, field: "commands[1].name" },
  ];
  it.each(invalid)("refuses $what naming $field", ({ manifest, field }) => {
    const { problems } = parseManifest(manifest);
    expect(
      problems.some((problem) => problem.startsWith(`${field}: `)),
      problems.join("\n"),
    ).toBe(true);
  });

  // gsd-core's Boolean(): a boolean key's "false" never gets here, since load.ts refuses a value of another type.
  it.each([
    [true, true],
    [false, false],
    ["high", true],
    ["", false],
    [1, true],
    [0, false],
    [undefined, false],
  ])("reads when = %j as %s", (value, active) => {
    expect(whenHolds("k", value === undefined ? {} : { k: value })).toBe(active);
    expect(whenHolds("toString", {})).toBe(false);
  });
});

describe("a capability bundle", () => {
  async function bundleWith(manifest: unknown, files: Record<string, string> = {}): Promise<string> {
    const dir = join(await tempDir(), "bundle");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "capability.json"), JSON.stringify(manifest));
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(dir, path, ".."), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    return dir;
  }
  const withFragment = (file: string) => ({ ...base, contributions: [{ point: "plan:pre", into: "planner", fragment: { file } }] });

  it.each([
    ["../outside.md", "climbs out"],
    ["/etc/passwd", "absolute"],
    ["missing.md", "does not exist"],
  ])("refuses fragment.file %s, naming the file and the field", async (file, why) => {
    const dir = await bundleWith(withFragment(file));
    const { problems } = await readBundle(dir);
    expect(problems).toEqual([expect.stringMatching(new RegExp(`^${join(dir, "capability.json")}: contributions\\[0\\]\\.fragment\\.file: .*${why}`))]);
  });

  it("refuses a fragment that escapes through a symlink, and a relative program outside the bundle", async () => {
    const outside = await tempDir();
    await writeFile(join(outside, "secret.md"), "x");
    const dir = await bundleWith({ ...withFragment("link.md"), commands: [{ name: "lint check", argv: ["../bin/lint"] }] });
    await symlink(join(outside, "secret.md"), join(dir, "link.md"));
    const { problems } = await readBundle(dir);
    expect(problems).toHaveLength(3);
    expect(problems.join("\n")).toMatch(/the symlink link\.md leads outside the bundle/);
    expect(problems.join("\n")).toMatch(/fragment\.file: .*symlink/);
    expect(problems.join("\n")).toMatch(/commands\[0\]\.argv\[0\]: .*climbs out/);
  });

  it("reports every problem at once", async () => {
    const dir = await bundleWith({ id: "X", version: "one", description: "" });
    const { problems } = await readBundle(dir);
    expect(problems.map((problem) => problem.split(": ")[1])).toEqual(["id", "version", "description"]);
  });

  it("warns at consent, and does not refuse, a command reference no installed capability declares", async () => {
    const user = (await readBundle(await bundleWith({ ...base, id: "user", commands: [], steps: [{ point: "plan:pre", ref: { command: "lint check" } }] })))
      .bundle as CapabilityBundle;
    const provider = (await readBundle(await bundleWith(base))).bundle as CapabilityBundle;
    expect(crossCheck([user])).toEqual([]);
    expect(consentWarnings(user.manifest, { declaredCommands: new Set() }).join("\n")).toContain(
      'steps[0].ref.command "lint check" names no command an installed capability declares',
    );
    expect(consentWarnings(user.manifest, { declaredCommands: new Set(["lint check"]) }).join("\n")).not.toContain("names no command");
    expect(crossCheck([provider, user])).toEqual([]);
    expect(crossCheck([provider, provider]).join("\n")).toMatch(/id: "lint-gate" is already installed/);
  });

  it("hashes every file, a dotfile too, so any edit changes it", async () => {
    const dir = join(await tempDir(), "copy");
    await cp(EXAMPLE, dir, { recursive: true });
    const first = await bundleHash(dir);
    expect(await bundleHash(dir)).toBe(first);
    await writeFile(join(dir, ".hidden"), "");
    const second = await bundleHash(dir);
    expect(second).not.toBe(first);
    await writeFile(join(dir, "bin/notes-check.mjs"), `${await readFile(join(dir, "bin/notes-check.mjs"), "utf8")}\n`);
    expect(await bundleHash(dir)).not.toBe(second);
  });

  it("discloses every executable surface, gate checks included", async () => {
    const { bundle } = await readBundle(EXAMPLE);
    const text = disclosureLines((bundle as CapabilityBundle).manifest).join("\n");
    expect(text).toContain('"notes check" runs ["node","bin/notes-check.mjs"]');
    expect(text).toContain('verify:post: runs the command "notes check"');
    expect(text).toContain('ship:pre: evaluates the predicate {"kind":"artifact-exists","artifact":"RELEASE-NOTES.md"}; blocking, onError halt');
    expect(text).toContain('ship:pre: runs the query command "notes check"; advisory');
    expect(text).toContain('plan:pre into planner: the file "fragments/planner.md"');
  });

  it("keeps the checked-in JSON Schema equal to the schema the loader uses", async () => {
    const checkedIn = await readFile(join(REPO_ROOT, CAPABILITY_SCHEMA_FILE), "utf8");
    expect(checkedIn, "stale generated file: run `npm run generate`").toBe(capabilityJsonSchemaText());
  });
});
