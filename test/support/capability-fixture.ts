import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { bundleHash } from "../../src/capabilities/consent.js";
import { tempDir } from "./temp.js";

/**
 * A throwaway project with capability bundles installed at their current hash, as
 * `the-loop capabilities add DIR --yes` would leave it, for the CLI tests of capabilities.
 */

export interface CapabilityProject {
  readonly cwd: string;
  readonly configFile: string;
  /** Each bundle's folder, by the name it was given. */
  readonly bundles: Readonly<Record<string, string>>;
  /** Rewrites the config: every bundle at its hash now, each entry's `config` as given. */
  install(config?: Readonly<Record<string, Record<string, unknown>>>): Promise<void>;
}

export interface BundleFixture {
  readonly manifest: Record<string, unknown>;
  /** Further files of the bundle, by path relative to it. */
  readonly files?: Readonly<Record<string, string>>;
}

export async function capabilityProject(bundles: Readonly<Record<string, BundleFixture>>): Promise<CapabilityProject> {
  const cwd = await tempDir();
  const configDir = join(cwd, ".the-loop");
  await mkdir(configDir);
  const configFile = join(configDir, "cli-config.yaml");
  const dirs: Record<string, string> = {};
  for (const [name, fixture] of Object.entries(bundles)) {
    const dir = join(cwd, "bundles", name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "capability.yaml"), stringify(fixture.manifest));
    for (const [path, text] of Object.entries(fixture.files ?? {})) {
      await mkdir(join(dir, path, ".."), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    dirs[name] = dir;
  }
  const install = async (config: Readonly<Record<string, Record<string, unknown>>> = {}): Promise<void> => {
    const entries = [];
    for (const [name, dir] of Object.entries(dirs)) {
      entries.push({ path: dir, sha256: await bundleHash(dir), ...(config[name] ? { config: config[name] } : {}) });
    }
    await writeFile(configFile, stringify({ version: 1, integrations: { local: { project: "demo" } }, capabilities: entries }));
  };
  await install();
  return { cwd, configFile, bundles: dirs, install };
}
