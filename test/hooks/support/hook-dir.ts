import { mkdir, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "../../support/temp.js";

/** The repository, installed as `the-loop` into a temp dir so a hook file can import the SDK. */
export const PACKAGE_ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * A fresh directory with `node_modules/the-loop` linked to this repository (its dist is built by
 * the global setup), so a hook file written under it resolves `the-loop/sdk/hooks` as an
 * operator's would. A fresh directory per test also keeps Node's module cache out of the way.
 */
export async function hookRoot(): Promise<string> {
  const root = await tempDir("the-loop-hooks-");
  await mkdir(join(root, "node_modules"), { recursive: true });
  await symlink(PACKAGE_ROOT, join(root, "node_modules", "the-loop"), "dir");
  return root;
}

/** Writes `text` at `path` under `root`, creating its directories; returns the absolute path. */
export async function writeIn(root: string, path: string, text: string): Promise<string> {
  const file = join(root, path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}
