import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach } from "vitest";
import { claudeCodeCacheDir } from "../../scripts/install-claude-code.js";
import { ensureCodex } from "../../scripts/install-codex.js";

export { CODEX_VERSION, ensureCodex } from "../../scripts/install-codex.js";

/**
 * The variable the stub provider names (`env_key`): Codex makes no model call without it in the
 * pane, and a session gets it only through `routing.tmux.passEnv`, as an operator's own would.
 */
export const CODEX_KEY_ENV = "CODEX_STUB_KEY";

const homes: string[] = [];

afterEach(async () => {
  await Promise.all(homes.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/**
 * A scratch `CODEX_HOME` as an operator's would be: a model provider of their own (the stub at
 * `modelUrl`), a comment, a folder they once declined — and the session's folder never trusted.
 * It lives under the install cache, not the system temp folder: Codex refuses to create its
 * helper binaries under the latter. Removed after the current test.
 */
export async function codexHome(modelUrl: string): Promise<string> {
  const parent = join(claudeCodeCacheDir(), "scratch");
  await mkdir(parent, { recursive: true });
  const home = await realpath(await mkdtemp(join(parent, "codex-home-")));
  homes.push(home);
  const config = [
    "# the operator's own settings",
    'model = "stub-model"',
    'model_provider = "stub"',
    "",
    "[model_providers.stub]",
    'name = "stub"',
    `base_url = "${modelUrl}/v1"`,
    'wire_api = "responses"',
    `env_key = "${CODEX_KEY_ENV}"`,
    "",
    '[projects."/srv/elsewhere"]',
    'trust_level = "untrusted" # declined once',
    "",
  ].join("\n");
  await writeFile(join(home, "config.toml"), config, { mode: 0o600 });
  return home;
}

export function readCodexConfig(home: string): Promise<string> {
  return readFile(join(home, "config.toml"), "utf8");
}

/**
 * What a session needs to run the real CLI offline against the stub: its home, the provider's
 * key, and every proxy variable pointing at `proxyUrl` (which refuses and counts), so a request
 * for anywhere but loopback is seen instead of made.
 */
export function codexEnv(home: string, proxyUrl: string): Record<string, string> {
  return {
    CODEX_HOME: home,
    [CODEX_KEY_ENV]: "sk-the-loop-test-key",
    HTTPS_PROXY: proxyUrl,
    HTTP_PROXY: proxyUrl,
    ALL_PROXY: proxyUrl,
    https_proxy: proxyUrl,
    http_proxy: proxyUrl,
    all_proxy: proxyUrl,
    NO_PROXY: "127.0.0.1,localhost",
    no_proxy: "127.0.0.1,localhost",
    TERM: "xterm-256color",
  };
}

/** The binary, installed into the cache first when missing (the install takes a minute or two). */
export function codexBinary(): Promise<string> {
  return ensureCodex();
}
