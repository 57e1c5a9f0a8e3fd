import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { escapeControlCharacters } from "../../src/config/problem.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/**
 * An error that quotes a config or graph file quotes it with its control characters escaped
 * (docs/config.md, "Problems"): a BEL, an ESC or a line break in a key or a node id never reaches
 * the terminal raw, and never forges a line of its own.
 */

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const BEL = "\u0007";
const ESC = "\u001b";

async function project(config: string, files: Record<string, string> = {}): Promise<string> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"));
  await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), config);
  for (const [name, text] of Object.entries(files)) await writeFile(join(cwd, ".the-loop", name), text);
  return cwd;
}

/** The output's lines that are not what the-loop itself writes between lines: each problem stays one line. */
const lines = (text: string): string[] => text.split("\n").filter((line) => line !== "");

describe("errors that quote input (real CLI)", () => {
  it("`config validate` on a config with a BEL and a newline in a key writes them escaped, the problem on one line", async () => {
    // The key is a YAML double-quoted string: \a is a BEL, \n a newline.
    const cwd = await project('version: 1\nrouting:\n  "auth\\aorized\\nUsers": [alice]\n');
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr).toContain("routing.auth\\u0007orized\\nUsers: unknown key");
    expect(lines(result.stderr).filter((line) => line.includes("unknown key"))).toHaveLength(1);
    const json = await runCli(["config", "validate", "--json"], { cwd });
    expect(json.stdout + json.stderr).not.toMatch(RAW_CONTROL);
  });

  it("`config validate` on a graph file with a BEL, an ESC and a newline in node ids writes them escaped", async () => {
    const config = "version: 1\ngraph:\n  enabled: true\n  default: g\ngraphs:\n  - name: g\n    path: g.yaml\n";
    const graph = [
      "name: g",
      'start: "a\\ab\\nc"',
      "nodes:",
      '  - id: "a\\ab\\nc"',
      "    description: x",
      "  - id: done",
      "    terminal: true",
      "edges:",
      '  - { from: "a\\ab\\nc", to: "d\\ene", on: pass }',
      "",
    ].join("\n");
    const cwd = await project(config, { "g.yaml": graph });
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr).toContain('nodes[0].id: node "a\\u0007b\\nc": a node id is lowercase words');
    expect(result.stderr).toContain('"d\\u001bne"');
    // Four problems, four lines: no quoted newline starts a line of its own.
    expect(lines(result.stderr).filter((line) => line.trimStart().startsWith(".the-loop/g.yaml:"))).toHaveLength(4);
  });
});

describe("escapeControlCharacters", () => {
  it.each([
    { input: "plain text, \\n as written", output: "plain text, \\n as written" },
    { input: `bell${BEL}`, output: "bell\\u0007" },
    { input: "line\nbreak\r\ttab", output: "line\\nbreak\\r\\ttab" },
    { input: `${ESC}[31mred`, output: "\\u001b[31mred" },
    { input: "del\u007f c1\u009b sep\u2028", output: "del\\u007f c1\\u009b sep\\u2028" },
    { input: "ünïcödé → stays", output: "ünïcödé → stays" },
  ])("$output", ({ input, output }) => {
    expect(escapeControlCharacters(input)).toBe(output);
  });
});
