import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleHash } from "../../src/capabilities/consent.js";
import { loadCapabilities } from "../../src/capabilities/load.js";
import type { CapabilityManifest } from "../../src/capabilities/manifest.js";
import {
  configuredHarnesses,
  installRefusal,
  loadedRuntimeCheck,
  runtimeHalt,
  runtimeWarning,
  supportsRuntime,
} from "../../src/capabilities/runtime-compat.js";
import { tempDir } from "../support/temp.js";

const manifest = (runtimeCompat: CapabilityManifest["runtimeCompat"]): CapabilityManifest =>
  ({ id: "ui", ...(runtimeCompat !== undefined ? { runtimeCompat } : {}) }) as CapabilityManifest;

describe("supportsRuntime", () => {
  it.each([
    { compat: undefined, runtime: "cursor", supports: true },
    { compat: { supported: ["*"], unsupported: [] }, runtime: "cursor", supports: true },
    { compat: { supported: ["*"], unsupported: ["cursor"] }, runtime: "cursor", supports: false },
    { compat: { supported: ["claude", "codex"], unsupported: [] }, runtime: "codex", supports: true },
    { compat: { supported: ["claude", "codex"], unsupported: [] }, runtime: "fake", supports: false },
    { compat: { supported: ["claude"], unsupported: ["claude"] }, runtime: "claude", supports: false },
  ])("$runtime against $compat: $supports", ({ compat, runtime, supports }) => {
    expect(supportsRuntime(compat, runtime)).toBe(supports);
  });
});

describe("configuredHarnesses", () => {
  it("is the default, every declared one, and every one a label maps to, each once", () => {
    expect(
      configuredHarnesses({
        defaultHarness: "claude",
        harnesses: { fake: {}, claude: {} },
        harnessByLabel: { "agent: codex": "codex", "agent: fake": "fake" },
      }),
    ).toEqual(["claude", "fake", "codex"]);
  });
});

describe("what a mismatch does", () => {
  const claudeOnly = manifest({ supported: ["claude"], unsupported: [] });

  it("refuses the install when no configured harness is supported, naming them and the fix", () => {
    const refusal = installRefusal(claudeOnly, ["fake", "cursor"]);
    expect(refusal).toContain("capability ui supports claude, and the config runs sessions only in fake, cursor");
    expect(refusal).toContain("Declare a harness it supports under routing.harnesses");
    expect(installRefusal(claudeOnly, ["fake", "claude"])).toBeUndefined();
    expect(installRefusal(manifest(undefined), ["fake"])).toBeUndefined();
  });

  it("warns at consent about each configured harness it does not support", () => {
    expect(runtimeWarning(manifest({ supported: ["*"], unsupported: ["cursor"] }), ["claude", "cursor", "fake"])).toBe(
      "runtimeCompat: it supports every runtime but cursor, not the harness cursor: an item whose session runs in it is blocked at the first node whose points it has hooks at (reason code capability-runtime)",
    );
    expect(runtimeWarning(claudeOnly, ["claude"])).toBeUndefined();
  });

  it("halts a session in a harness it does not support, naming the harness and the fix", () => {
    const halt = runtimeHalt(claudeOnly, "fake");
    expect(halt).toContain("capability ui does not run in the harness fake (its runtimeCompat supports claude)");
    expect(halt).toContain("sessions start --work-item REF --agent NAME");
    expect(halt).toContain("remove the capability");
    // All of it fits the ticket's comment, which keeps a reason's first 300 characters.
    expect(halt?.length).toBeLessThanOrEqual(300);
    expect(runtimeHalt(claudeOnly, "claude")).toBeUndefined();
    expect(runtimeHalt(manifest(undefined), "fake")).toBeUndefined();
  });
});

describe("an installed capability read again against the config's harnesses (config validate, the daemon's start)", () => {
  const claudeOnly = manifest({ supported: ["claude"], unsupported: [] });

  it.each([
    { harnesses: ["claude"], refused: false, warned: false },
    { harnesses: ["claude", "fake"], refused: false, warned: true },
    { harnesses: ["fake"], refused: true, warned: false },
    { harnesses: ["fake", "cursor"], refused: true, warned: false },
  ])("with harnesses $harnesses: refused $refused, warned $warned", ({ harnesses, refused, warned }) => {
    const check = loadedRuntimeCheck(claudeOnly, harnesses);
    expect(check.refusal !== undefined).toBe(refused);
    expect(check.warning !== undefined).toBe(warned);
    if (refused) {
      expect(check.refusal).toContain(`the config runs sessions only in ${harnesses.join(", ")}`);
      expect(check.refusal).toContain("Declare a harness it supports under routing.harnesses");
      expect(check.refusal).toContain("or remove its entry from `capabilities:`");
    }
    if (warned) {
      expect(check.warning).toContain("capability ui: runtimeCompat: it supports claude, not the harness fake");
      expect(check.warning).toContain("sessions start --work-item REF --agent NAME");
    }
  });

  it("says nothing of a capability without runtimeCompat", () => {
    expect(loadedRuntimeCheck(manifest(undefined), ["fake"])).toEqual({});
  });

  it("refuses the load of one that supports none of them, and warns of one that excludes some; without harnesses, neither", async () => {
    const dir = join(await tempDir(), "bundle");
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, "capability.json"),
      JSON.stringify({ id: "notes", version: "1.0.0", description: "d", runtimeCompat: { supported: ["claude"], unsupported: [] } }),
    );
    const config = { capabilities: [{ path: dir, sha256: await bundleHash(dir) }] };
    await expect(loadCapabilities(config, dir, { harnesses: ["fake"], configFile: "cli-config.yaml" })).rejects.toThrow(
      /capabilities\[0\] in cli-config\.yaml .*capability notes supports claude, and the config runs sessions only in fake/,
    );
    const warnings: string[] = [];
    const loaded = await loadCapabilities(config, dir, { harnesses: ["fake", "claude"], warn: (message) => warnings.push(message) });
    expect(loaded.map((capability) => capability.manifest.id)).toEqual(["notes"]);
    expect(warnings).toEqual([expect.stringContaining("capability notes: runtimeCompat: it supports claude, not the harness fake")]);
    expect((await loadCapabilities(config, dir)).map((capability) => capability.manifest.id)).toEqual(["notes"]);
  });
});
