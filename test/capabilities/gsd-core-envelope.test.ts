import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hookEnvelope } from "../../src/capabilities/active.js";
import { consentWarnings, disclosureLines } from "../../src/capabilities/consent.js";
import { configValues, crossCheck, readBundle } from "../../src/capabilities/load.js";
import type { CapabilityBundle, LoadedCapability } from "../../src/capabilities/load.js";
import { LOOP_POINTS } from "../../src/capabilities/manifest.js";
import { REPO_ROOT } from "../support/cli.js";

/**
 * The-loop's envelope against gsd-core's own: test/fixtures/gsd-core/ holds bundles from
 * open-gsd/gsd-core (unchanged, MIT) and what its `gsd-tools loop render-hooks <point> --raw`
 * printed for them (scripts/regenerate-gsd-core-fixtures.ts; the commit is in SOURCE.json).
 */

const ROOT = join(REPO_ROOT, "test/fixtures/gsd-core");

interface Expected {
  readonly config: Record<string, Record<string, boolean | string | number>>;
  readonly envelopes: Record<string, { point: string; activeHooks: Record<string, unknown>[]; rendered: string; warnings?: string[] }>;
}

async function bundles(): Promise<CapabilityBundle[]> {
  const found: CapabilityBundle[] = [];
  for (const id of (await readdir(join(ROOT, "bundles"))).sort()) {
    const outcome = await readBundle(join(ROOT, "bundles", id));
    expect(outcome.problems, id).toEqual([]);
    found.push(outcome.bundle as CapabilityBundle);
  }
  return found;
}

const variants = async (): Promise<string[]> => (await readdir(join(ROOT, "expected"))).filter((name) => name !== "unknown-point.json");

describe("gsd-core's bundles, unchanged", () => {
  it("load, cross-check and show their consequences at consent", async () => {
    const all = await bundles();
    expect(all.map((bundle) => bundle.manifest.id)).toEqual(["hello-note", "intel", "schema-gate", "security", "tdd", "ui"]);
    expect(crossCheck(all)).toEqual([]);
    const byId = new Map(all.map((bundle) => [bundle.manifest.id, bundle.manifest]));
    expect(disclosureLines(byId.get("hello-note") as CapabilityBundle["manifest"])).toContain(
      "executable surfaces: none — declarative-only (no hooks, command modules, commands, MCP servers, reviewer lanes, resolver or gate checks)",
    );
    // ui's plan gate is blocking, halts on error, and its when defaults to true: installed unchanged, it halts plan:pre.
    const ui = consentWarnings(byId.get("ui") as CapabilityBundle["manifest"]).join("\n");
    expect(ui).toContain('gates[0].check.query "ui.plan-gate" is not a command\'s words');
    expect(ui).toContain("it HALTS plan:pre while workflow.ui_safety_gate is true (its default: true;");
    const intel = disclosureLines(byId.get("intel") as CapabilityBundle["manifest"], { declaredCommands: new Set() }).join("\n");
    expect(intel).toContain(
      'commands[0]: gsd-core\'s command module "intel-command-router.cjs" (family "intel", router "routeIntelCommand") — not loaded by the-loop',
    );
    expect(intel).toContain('steps[0].ref.command "intel api-surface" names no command an installed capability declares');
  });

  it.each(["default.json", "intel.enabled-on.json", "workflow.tdd_mode-on.json"])(
    "render every point as gsd-core does with the config of %s",
    async (variant) => {
      expect(await variants()).toContain(variant);
      const expected = JSON.parse(await readFile(join(ROOT, "expected", variant), "utf8")) as Expected;
      const loaded: LoadedCapability[] = (await bundles()).map((bundle) => {
        const slice = configValues(bundle.manifest, expected.config[bundle.manifest.id]);
        expect(slice.problems).toEqual([]);
        return { ...bundle, configuredPath: bundle.dir, values: slice.values };
      });
      for (const point of LOOP_POINTS) {
        const theirs = expected.envelopes[point];
        const ours = JSON.parse(JSON.stringify(hookEnvelope(loaded, point))) as Expected["envelopes"][string];
        expect(Object.keys(ours), point).toEqual(Object.keys(theirs ?? {}));
        expect(ours.rendered, point).toBe(theirs?.rendered);
        // Field by field; the-loop's own additions (source, message) are extra keys on a hook.
        const hooks = ours.activeHooks.map(({ source: _source, message: _message, ...hook }) => hook);
        expect(hooks, point).toEqual(theirs?.activeHooks);
        hooks.forEach((hook, index) => expect(Object.keys(hook), `${point} #${index}`).toEqual(Object.keys(theirs?.activeHooks[index] ?? {})));
      }
    },
  );
});
