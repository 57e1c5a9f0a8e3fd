import { mkdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleHash } from "../../src/capabilities/consent.js";
import { loadCapabilities, readBundle } from "../../src/capabilities/load.js";
import { runCli } from "../support/cli.js";
import { capabilityProject } from "../support/capability-fixture.js";
import { tempDir } from "../support/temp.js";

/**
 * Consent that holds (docs/capabilities.md, "Consent"): what is hashed is what runs. A symlink
 * is hashed by what it leads to and one leading out of the bundle is refused; the manifest is
 * parsed from the very bytes that were hashed.
 */

const OK_ARGV = ["node", "bin/ok.mjs"];
const EVIL_ARGV = ["node", "bin/evil.mjs"];
const manifestWith = (argv: readonly string[]): string =>
  JSON.stringify({ id: "notes", version: "1.0.0", description: "d", commands: [{ name: "notes check", argv }] });

describe("a symlink in a bundle", () => {
  it("is refused at `capabilities add` when it leads out of the bundle, naming the link and the fix, and nothing changes", async () => {
    const p = await capabilityProject({ notes: { manifest: JSON.parse(manifestWith(OK_ARGV)) as Record<string, unknown>, files: { "bin/ok.mjs": "" } } });
    const outside = await tempDir();
    await mkdir(join(outside, "lib"));
    await writeFile(join(outside, "lib", "code.mjs"), "export const x = 1;\n");
    const dir = p.bundles.notes as string;
    await symlink(join(outside, "lib"), join(dir, "lib"));
    const before = await readFile(p.configFile, "utf8");

    const added = await runCli(["--config", p.configFile, "capabilities", "add", dir, "--yes"], { cwd: p.cwd });
    expect(added.code, added.stderr).toBe(2);
    expect(added.stderr).toContain("the symlink lib leads outside the bundle");
    expect(added.stderr).toContain("copy what it needs into the bundle");
    expect(await readFile(p.configFile, "utf8")).toBe(before);

    // And at the load: a config that names the bundle does not load it, whatever hash it gives.
    const config = { capabilities: [{ path: dir, sha256: "0".repeat(64) }] };
    await expect(loadCapabilities(config, p.cwd)).rejects.toThrow(/the symlink lib leads outside the bundle/);
  });

  it("is hashed by what it leads to inside the bundle: the same file by another spelling keeps the hash, a change of its content refuses the load", async () => {
    const dir = join(await tempDir(), "bundle");
    await mkdir(join(dir, "real"), { recursive: true });
    await writeFile(join(dir, "capability.json"), manifestWith(OK_ARGV));
    await writeFile(join(dir, "real", "ok.mjs"), "console.log('ok');\n");
    await mkdir(join(dir, "bin"));
    await symlink("../real/ok.mjs", join(dir, "bin", "ok.mjs"));
    const consented = await bundleHash(dir);

    // The link's own text is not what counts: what it leads to is.
    await rm(join(dir, "bin", "ok.mjs"));
    await symlink(join(dir, "real", "ok.mjs"), join(dir, "bin", "ok.mjs"));
    expect(await bundleHash(dir)).toBe(consented);
    const loaded = await loadCapabilities({ capabilities: [{ path: dir, sha256: consented }] }, dir);
    expect(loaded[0]?.files.get("bin/ok.mjs")).toBe(loaded[0]?.files.get("real/ok.mjs"));

    await writeFile(join(dir, "real", "ok.mjs"), "console.log('changed after consent');\n");
    await expect(loadCapabilities({ capabilities: [{ path: dir, sha256: consented }] }, dir)).rejects.toThrow(/changed since it was consented to/);
  });

  it("that leads nowhere is refused", async () => {
    const dir = join(await tempDir(), "bundle");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "capability.json"), manifestWith(["node", "-v"]));
    await symlink(join(dir, "gone.mjs"), join(dir, "dangling.mjs"));
    const { problems } = await readBundle(dir);
    expect(problems).toEqual([expect.stringContaining("the symlink dangling.mjs leads nowhere")]);
  });
});

describe("the manifest is read once", () => {
  async function consentedBundle(): Promise<{ dir: string; sha256: string }> {
    const dir = join(await tempDir(), "bundle");
    await mkdir(join(dir, "bin"), { recursive: true });
    await writeFile(join(dir, "bin", "ok.mjs"), "");
    await writeFile(join(dir, "bin", "evil.mjs"), "");
    await writeFile(join(dir, "capability.json"), manifestWith(OK_ARGV));
    return { dir, sha256: await bundleHash(dir) };
  }

  it("hashes and parses the same bytes: a manifest swapped right after it was read is refused, not run", async () => {
    const { dir, sha256 } = await consentedBundle();
    await writeFile(join(dir, "capability.json"), manifestWith(EVIL_ARGV));
    const reads: string[] = [];
    const load = loadCapabilities({ capabilities: [{ path: dir, sha256 }] }, dir, {
      afterRead: async (path) => {
        reads.push(path);
        // The consented manifest is put back the moment the unconsented one was read.
        if (path === "capability.json") await writeFile(join(dir, "capability.json"), manifestWith(OK_ARGV));
      },
    });
    await expect(load).rejects.toThrow(/changed since it was consented to/);
    expect(reads.filter((path) => path === "capability.json")).toHaveLength(1);
    // Read again now that it is the consented one, it loads, with the consented argv.
    const loaded = await loadCapabilities({ capabilities: [{ path: dir, sha256 }] }, dir);
    expect(loaded[0]?.manifest.commands[0]?.argv).toEqual(OK_ARGV);
  });

  it("never loads unconsented argv while the manifest is swapped back and forth", async () => {
    const { dir, sha256 } = await consentedBundle();
    const manifest = join(dir, "capability.json");
    // Prepared outside the bundle, renamed in: each swap is atomic, so every read sees one whole manifest.
    const staging = await tempDir();
    let stop = false;
    const swapper = (async () => {
      for (let n = 0; !stop; n++) {
        const next = join(staging, `m${n}`);
        await writeFile(next, manifestWith(n % 2 === 0 ? EVIL_ARGV : OK_ARGV));
        await rename(next, manifest);
      }
    })();
    let ran = 0;
    let refused = 0;
    try {
      for (let attempt = 0; attempt < 150; attempt++) {
        const loaded = await loadCapabilities({ capabilities: [{ path: dir, sha256 }] }, dir).catch(() => undefined);
        if (loaded === undefined) refused++;
        else expect(loaded[0]?.manifest.commands[0]?.argv, `attempt ${attempt}`).toEqual(OK_ARGV);
        if (loaded !== undefined) ran++;
      }
    } finally {
      stop = true;
      await swapper;
    }
    expect(ran + refused).toBe(150);
  });
});
