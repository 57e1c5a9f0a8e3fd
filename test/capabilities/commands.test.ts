import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandArgv, commandNames, findCommand, leadingWords, optionValue } from "../../src/capabilities/commands.js";
import { BUILT_IN_COMMAND_WORDS, configValues, crossCheck, readBundle } from "../../src/capabilities/load.js";
import type { LoadedCapability } from "../../src/capabilities/load.js";
import { parseManifest } from "../../src/capabilities/manifest.js";
import { buildProgram } from "../../src/cli/program.js";
import { tempDir } from "../support/temp.js";

function capability(id: string, commands: { name: string; argv: string[] }[], dir = `/bundles/${id}`): LoadedCapability {
  const { manifest, problems } = parseManifest({ id, version: "1.0.0", description: "d", commands });
  if (!manifest) throw new Error(problems.join("\n"));
  return {
    dir,
    file: join(dir, "capability.yaml"),
    manifest,
    sha256: "0".repeat(64),
    realDir: dir,
    files: new Map(),
    fragments: new Map(),
    configuredPath: dir,
    values: configValues(manifest, undefined).values,
  };
}

const intel = capability("intel", [
  { name: "intel", argv: ["intel-bin"] },
  { name: "intel api-surface", argv: ["intel-bin", "api"] },
]);
const notes = capability("notes", [{ name: "notes check", argv: ["node", "bin/check.mjs"] }]);

describe("which declared command a line names", () => {
  const cases: { line: string[]; name?: string; rest?: string[] }[] = [
    { line: ["notes", "check"], name: "notes check", rest: [] },
    { line: ["notes", "check", "--phase", "3", "--raw"], name: "notes check", rest: ["--phase", "3", "--raw"] },
    { line: ["intel", "api-surface", "src"], name: "intel api-surface", rest: ["src"] },
    { line: ["intel", "other"], name: "intel", rest: ["other"] },
    { line: ["intel", "API-surface"], name: "intel", rest: ["API-surface"] },
    { line: ["notes"] },
    { line: ["notes", "checks"] },
    { line: ["Notes", "check"] },
    { line: ["notes check"] },
    { line: ["notes;", "check"] },
    { line: ["--phase", "notes", "check"] },
    { line: [] },
  ];
  it.each(cases)("$line", ({ line, name, rest }) => {
    const match = findCommand([intel, notes], line);
    expect(match?.command.name).toBe(name);
    if (name !== undefined) expect(match?.rest).toEqual(rest);
  });

  it("reads only command words before the first argument that is none", () => {
    expect(leadingWords(["a", "b-c", "3d", "e"])).toEqual(["a", "b-c"]);
    expect(leadingWords(["$(id)", "a"])).toEqual([]);
  });

  it("lists the installed commands sorted", () => {
    expect(commandNames([notes, intel])).toEqual(["intel", "intel api-surface", "notes check"]);
  });

  const options: { args: string[]; option: string; value?: string }[] = [
    { args: ["--phase", "3"], option: "--phase", value: "3" },
    { args: ["x", "--phase=3", "--phase", "4"], option: "--phase", value: "3" },
    { args: ["--phase"], option: "--phase" },
    { args: ["--", "--phase", "3"], option: "--phase" },
    { args: ["--phases", "3"], option: "--phase" },
    { args: ["--work-item", "local:demo#1"], option: "--work-item", value: "local:demo#1" },
  ];
  it.each(options)("$option in $args", ({ args, option, value }) => {
    expect(optionValue(args, option)).toBe(value);
  });
});

describe("the argv a declared command runs", () => {
  it("appends the rest, names a bundle program by its real path, and refuses a bundle changed since consent", async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    await mkdir(join(dir, "bin"));
    await writeFile(join(dir, "bin", "check.mjs"), "");
    await writeFile(join(outside, "evil.mjs"), "");
    await writeFile(
      join(dir, "capability.json"),
      JSON.stringify({
        id: "notes",
        version: "1.0.0",
        description: "d",
        commands: [
          { name: "notes check", argv: ["node", "bin/check.mjs", "--strict"] },
          { name: "notes run", argv: ["./bin/check.mjs"] },
          { name: "notes evil", argv: ["bin/evil.mjs"] },
        ],
      }),
    );
    const outcome = await readBundle(dir);
    // The load itself does not see bin/evil.mjs yet: it is added after consent.
    expect(outcome.problems).toEqual([`${join(dir, "capability.json")}: commands[2].argv[0]: "bin/evil.mjs" does not exist in the bundle`]);
    await writeFile(join(dir, "bin", "evil.mjs"), "");
    const read = await readBundle(dir);
    if (!read.bundle) throw new Error(read.problems.join("\n"));
    await rm(join(dir, "bin", "evil.mjs"));
    const loaded: LoadedCapability = { ...read.bundle, configuredPath: dir, values: {} };
    const match = (line: string[]) => {
      const found = findCommand([loaded], line);
      if (!found) throw new Error("no match");
      return found;
    };
    await expect(commandArgv(match(["notes", "check"]))).rejects.toThrow(/changed since it was consented to \(the file "bin\/evil.mjs"\)/);
    await symlink(join(outside, "evil.mjs"), join(dir, "bin", "evil.mjs"));
    await expect(commandArgv(match(["notes", "evil"]))).rejects.toThrow(/changed since it was consented to .*leads outside the bundle/);
    await rm(join(dir, "bin", "evil.mjs"));
    await writeFile(join(dir, "bin", "evil.mjs"), "");
    expect(await commandArgv(match(["notes", "check", "a b", "--x"]))).toEqual(["node", "bin/check.mjs", "--strict", "a b", "--x"]);
    expect(await commandArgv(match(["notes", "run"]))).toEqual([join(dir, "bin", "check.mjs")]);
    await writeFile(join(dir, "bin", "check.mjs"), "process.exit(0) // edited after consent\n");
    await expect(commandArgv(match(["notes", "run"]))).rejects.toThrow(/changed since it was consented to \(the file "bin\/check.mjs"\)/);
  });
});

describe("command names across the installed set", () => {
  it("reserves every command of the-loop's own", () => {
    const program = buildProgram();
    const builtIn = [...program.commands.flatMap((command) => [command.name(), ...command.aliases()]), "help"];
    expect(builtIn.filter((name) => !BUILT_IN_COMMAND_WORDS.includes(name))).toEqual([]);
  });

  it("refuses a command beginning with a built-in word, and one name declared twice, naming the field", () => {
    const graphy = capability("graphy", [
      { name: "graph extra", argv: ["x"] },
      { name: "graphy", argv: ["x"] },
    ]);
    const twin = capability("twin", [{ name: "notes check", argv: ["y"] }]);
    expect(crossCheck([graphy, notes, twin])).toEqual([
      expect.stringMatching(/^\/bundles\/graphy\/capability\.yaml: commands\[0\]\.name: "graph extra" begins with "graph", a command of the-loop itself/),
      expect.stringMatching(/^\/bundles\/twin\/capability\.yaml: commands\[0\]\.name: "notes check" is already a command of notes/),
    ]);
  });
});
