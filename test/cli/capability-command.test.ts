import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { capabilityProject } from "../support/capability-fixture.js";
import type { BundleFixture } from "../support/capability-fixture.js";

/**
 * A command that leaves a marker (where it ran, its argv, the variables it was given), echoes its
 * arguments to stdout, says something on stderr, and exits with the status after `--exit`. The
 * marker goes two folders up from where it runs — the project, when that is the bundle — since a
 * file written inside the bundle would change what was consented to.
 */
const ECHO = `import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
const args = process.argv.slice(2);
writeFileSync(resolve("..", "..", "marker.json"), JSON.stringify({ cwd: process.cwd(), args, env: process.env }));
process.stdout.write(JSON.stringify(args) + "\\n");
process.stderr.write("echo: done\\n");
const at = args.indexOf("--exit");
process.exitCode = at === -1 ? 0 : Number(args[at + 1]);
`;

const FIXTURE: BundleFixture = {
  manifest: {
    id: "echoer",
    version: "1.0.0",
    description: "Commands for the CLI tests.",
    commands: [
      { name: "echoer run", argv: ["node", "bin/echo.mjs", "--from-manifest"] },
      { name: "echoer run deep", argv: ["node", "bin/echo.mjs", "--deep"] },
      { name: "echoer slow", argv: ["node", "-e", "setTimeout(() => {}, 60000)"], timeoutMs: 300 },
    ],
  },
  files: { "bin/echo.mjs": ECHO },
};

interface Marker {
  cwd: string;
  args: string[];
  env: Record<string, string>;
}

const markerOf = async (projectDir: string): Promise<Marker> => JSON.parse(await readFile(join(projectDir, "marker.json"), "utf8")) as Marker;

describe("the-loop <words> … runs a capability's command", () => {
  it("runs the longest matching name's argv in the bundle, the rest appended, its output and status passed through", async () => {
    const p = await capabilityProject({ echoer: FIXTURE });
    const dir = p.bundles.echoer ?? "";
    const result = await runCli(["echoer", "run", "a b", "--phase", "3", "--work-item", "7", "--raw"], {
      cwd: p.cwd,
      env: { GITHUB_TOKEN: "ghp_not_for_capabilities", THE_LOOP_WEBHOOK_SECRET: "s3cret" },
    });
    expect(result.code, result.stderr).toBe(0);
    const args = ["--from-manifest", "a b", "--phase", "3", "--work-item", "7", "--raw"];
    expect(result.stdout).toBe(`${JSON.stringify(args)}\n`);
    expect(result.stderr).toBe("echo: done\n");
    const marker = await markerOf(p.cwd);
    expect(marker.cwd).toBe(dir);
    expect(marker.args).toEqual(args);
    expect(marker.env.THE_LOOP_PHASE).toBe("3");
    expect(marker.env.THE_LOOP_WORK_ITEM).toBe("local:demo#7");
    expect(await realpath(marker.env.THE_LOOP_WORKDIR ?? "")).toBe(await realpath(p.cwd));
    expect(marker.env.GITHUB_TOKEN).toBeUndefined();
    expect(marker.env.THE_LOOP_WEBHOOK_SECRET).toBeUndefined();

    const deep = await runCli(["echoer", "run", "deep", "x"], { cwd: p.cwd });
    expect(deep.code, deep.stderr).toBe(0);
    expect(deep.stdout).toBe(`${JSON.stringify(["--deep", "x"])}\n`);
    expect((await markerOf(p.cwd)).env.THE_LOOP_PHASE).toBeUndefined();

    // Global options before the words are the-loop's; the config named is the one used.
    const elsewhere = await runCli(["--config", p.configFile, "echoer", "run"], { cwd: dir, home: p.cwd });
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).toBe(`${JSON.stringify(["--from-manifest"])}\n`);
  });

  it("exits with the command's exit status", async () => {
    const p = await capabilityProject({ echoer: FIXTURE });
    const result = await runCli(["echoer", "run", "--exit", "7"], { cwd: p.cwd });
    expect(result.code).toBe(7);
    expect(result.stdout).toBe(`${JSON.stringify(["--from-manifest", "--exit", "7"])}\n`);
    expect(result.stderr).toBe("echo: done\n");
  });

  it("stops a command past its timeoutMs and exits 1 saying so", async () => {
    const p = await capabilityProject({ echoer: FIXTURE });
    const result = await runCli(["echoer", "slow"], { cwd: p.cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"echoer slow" (capability echoer) did not finish within 0.3 s and was stopped');
  });

  it("refuses to run anything of a bundle changed since consent", async () => {
    const p = await capabilityProject({ echoer: FIXTURE });
    const dir = p.bundles.echoer ?? "";
    await writeFile(join(dir, "bin", "echo.mjs"), `${ECHO}\n// changed\n`);
    const result = await runCli(["echoer", "run"], { cwd: p.cwd });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`the-loop capabilities add "${dir}" --yes`);
    await expect(readFile(join(p.cwd, "marker.json"))).rejects.toThrow();
  });

  it("reports a name no capability declares as an unknown command, listing the installed ones", async () => {
    const p = await capabilityProject({ echoer: FIXTURE });
    const result = await runCli(["echoer", "walk"], { cwd: p.cwd });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("error: unknown command 'echoer'");
    expect(result.stderr).toContain("hint: the installed capabilities' commands are `the-loop echoer run`, `the-loop echoer run deep`, `the-loop echoer slow`");
  });

  it("looks nothing up for a first word that is not a command word", async () => {
    const p = await capabilityProject({ echoer: FIXTURE });
    // An unreadable config would fail any lookup: a line that cannot name a command never gets that far.
    await writeFile(p.configFile, "capabilities: [oops\n");
    for (const word of ["Echoer", "echoer;id", "$(id)"]) {
      const result = await runCli([word, "run"], { cwd: p.cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`error: unknown command '${word}'`);
      expect(result.stderr).not.toContain("hint:");
    }
  });

  it("refuses at load a capability command that begins with a built-in command's word, naming the field", async () => {
    const p = await capabilityProject({
      echoer: { ...FIXTURE, manifest: { ...FIXTURE.manifest, commands: [{ name: "graph export", argv: ["node", "bin/echo.mjs"] }] } },
    });
    const result = await runCli(["config", "validate"], { cwd: p.cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('commands[0].name: "graph export" begins with "graph", a command of the-loop itself');
  });
});
