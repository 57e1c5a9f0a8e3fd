import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, runCli } from "../support/cli.js";
import { capabilityProject } from "../support/capability-fixture.js";

/**
 * What `capabilities add --yes` does to the rest of the config file, as docs/capabilities.md
 * says: keys, values, order and comments are kept, and the file is laid out again by the YAML
 * library — flow collections get spaces inside their brackets, a long plain value is folded.
 */
const MANIFEST = { id: "notes", version: "1.0.0", description: "d", commands: [{ name: "notes check", argv: ["node", "bin/ok.mjs"] }] };
const LONG = "a plain value that runs on past the eighty columns the YAML library lays a file out in";

describe("capabilities add and the rest of the config file", () => {
  it("keeps the keys, values, order and comments, and lays flow collections and long values out again", async () => {
    const p = await capabilityProject({ notes: { manifest: MANIFEST, files: { "bin/ok.mjs": "" } } });
    const written = [
      "# the operator's own words",
      "version: 1",
      "integrations: {local: {project: demo}}   # flow style",
      "routing:",
      "  authorizedUsers: [alice,bob]",
      `  autoExecuteLabel: ${LONG}`,
      "",
    ].join("\n");
    await writeFile(p.configFile, written);
    const added = await runCli(["--config", p.configFile, "capabilities", "add", p.bundles.notes as string, "--yes"], { cwd: p.cwd });
    expect(added.code, added.stderr).toBe(0);
    const after = await readFile(p.configFile, "utf8");
    expect(after.startsWith("# the operator's own words\nversion: 1\n")).toBe(true);
    expect(after).toContain("integrations: { local: { project: demo } } # flow style\n");
    expect(after).toContain("  authorizedUsers: [ alice, bob ]\n");
    expect(after).not.toContain(`  autoExecuteLabel: ${LONG}\n`);
    expect(after.replace(/\n\s+/g, " ")).toContain(`autoExecuteLabel: ${LONG}`);
    expect(after).toMatch(/capabilities:\n {2}- path: .*notes\n {4}sha256: [0-9a-f]{64}\n$/);

    const doc = (await readFile(join(REPO_ROOT, "docs", "capabilities.md"), "utf8")).replace(/\s+/g, " ");
    expect(doc).not.toContain("comments included, stays as written");
    expect(doc).toContain("flow collections get spaces inside their brackets (`{a: 1}` becomes `{ a: 1 }`)");
  });
});
