import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureGeminiCli } from "../../scripts/install-gemini.js";
import type { GeminiStub } from "./gemini-stub.js";
import { tempDir } from "./temp.js";

export { GEMINI_CLI_VERSION, ensureGeminiCli } from "../../scripts/install-gemini.js";

/** A made-up key: the stub never checks it, and Gemini CLI only needs one to be set. */
export const FAKE_GEMINI_KEY = "AIza-the-loop-test-key-0123456789abcdefghij";

/**
 * A scratch home as an operator's would be before Gemini CLI ever ran unattended: `settings` and
 * `trustedFolders` stand for the operator's own files (left out: no file).
 */
export async function geminiHome(files: { settings?: Record<string, unknown>; trustedFolders?: Record<string, string> } = {}): Promise<string> {
  const home = await tempDir("the-loop-gemini-home-");
  await mkdir(join(home, ".gemini"), { mode: 0o700 });
  if (files.settings !== undefined) await writeFile(join(home, ".gemini", "settings.json"), `${JSON.stringify(files.settings, null, 2)}\n`);
  if (files.trustedFolders !== undefined) await writeFile(join(home, ".gemini", "trustedFolders.json"), `${JSON.stringify(files.trustedFolders, null, 2)}\n`);
  return home;
}

export async function readGeminiFile(home: string, name: "settings.json" | "trustedFolders.json"): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(home, ".gemini", name), "utf8")) as Record<string, unknown>;
}

/**
 * What a session needs to run the real CLI offline against the stub: its model API on loopback,
 * and every other request sent to the stub as a proxy, to be refused and counted.
 */
export function geminiEnv(home: string, stub: GeminiStub): Record<string, string> {
  return {
    HOME: home,
    GEMINI_API_KEY: FAKE_GEMINI_KEY,
    GOOGLE_GEMINI_BASE_URL: stub.url,
    ...stub.proxyEnv,
    TERM: "xterm-256color",
  };
}

/** The binary, installed into the cache first when missing (the install takes seconds). */
export function geminiBinary(): Promise<string> {
  return ensureGeminiCli();
}
