import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/cli.js";

/** The README's quick start is a promise to a newcomer; CI runs exactly what it shows. */
describe("the README", () => {
  it("has a quick start of exactly two commands, both run by CI", async () => {
    const readme = await readFile(`${REPO_ROOT}/README.md`, "utf8");
    const section = /## Quick start\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? "";
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    const commands = block.split("\n").filter((line) => line.trim() !== "");
    expect(commands).toEqual(["npm ci && npm run demo", "npm test"]);

    const ci = await readFile(`${REPO_ROOT}/.ci/run`, "utf8");
    for (const step of ["npm ci", "npm run demo", "npm test"]) expect(ci).toMatch(new RegExp(`^${step}$`, "m"));

    const { scripts } = JSON.parse(await readFile(`${REPO_ROOT}/package.json`, "utf8")) as { scripts: Record<string, string> };
    expect(Object.keys(scripts)).toEqual(expect.arrayContaining(["demo", "test", "build", "typecheck", "lint"]));
  });

  it("documents every top-level command the CLI has", async () => {
    const readme = await readFile(`${REPO_ROOT}/README.md`, "utf8");
    const { buildProgram } = await import("../src/cli/program.js");
    for (const command of buildProgram()
      .commands.map((c) => c.name())
      .filter((name) => name !== "help")) {
      expect(readme, `README lacks \`the-loop ${command}\``).toContain(`\`the-loop ${command}`);
    }
  });

  it("names the per-item graph choice the CLI and the start keyword have", async () => {
    const readme = (await readFile(`${REPO_ROOT}/README.md`, "utf8")).replace(/\s+/g, " ");
    expect(readme).not.toMatch(/per-item choice of graph is not there/);
    expect(readme).toContain("`the-loop:start-execution graph=NAME`");
    expect(readme).toContain("`the-loop sessions start --graph NAME`");
    const { buildProgram } = await import("../src/cli/program.js");
    const start = buildProgram()
      .commands.find((c) => c.name() === "sessions")
      ?.commands.find((c) => c.name() === "start");
    expect(start?.options.map((option) => option.long)).toContain("--graph");
  });

  it("says `hooks points` lists every family it lists", async () => {
    const readme = await readFile(`${REPO_ROOT}/README.md`, "utf8");
    const row = readme.split("\n").find((line) => line.startsWith("| `the-loop hooks points")) ?? "";
    const { HOOK_FAMILIES } = await import("../src/sdk/hooks/points.js");
    expect(HOOK_FAMILIES).toEqual(["lifecycle", "loop"]);
    expect(row).toContain("the lifecycle points and the `loop.*` events");
    expect(row).toContain("--family lifecycle\\|loop");
  });
});
