import { existsSync, mkdirSync, readlinkSync, renameSync, symlinkSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The CLI entry point of this installation: what `the-loop` inside a session must run. */
export const CLI_ENTRY = fileURLToPath(new URL("../../bin/the-loop.js", import.meta.url));

/**
 * Makes `the-loop` resolvable inside every session: `<binDir>/the-loop` links to this very
 * installation, and the session's PATH starts with binDir. An agent then talks back with the same
 * version (and the same config) as the daemon that started it, whether or not the-loop is
 * installed globally.
 */
export function ensureSessionBin(binDir: string, entry: string = CLI_ENTRY): string {
  const link = join(binDir, "the-loop");
  mkdirSync(binDir, { recursive: true });
  let current: string | undefined;
  try {
    current = readlinkSync(link);
  } catch {
    current = undefined;
  }
  if (current !== entry) {
    // Replaced by rename so a session starting right now never sees the link missing.
    const temporary = `${link}.${process.pid}.tmp`;
    symlinkSync(entry, temporary);
    renameSync(temporary, link);
  }
  return binDir;
}

export interface SessionEnvInput {
  readonly workItem: string;
  readonly binDir: string;
  /** The config file the daemon runs with, so `the-loop ask` inside the session finds the same state. */
  readonly configFile?: string;
  readonly basePath?: string;
}

export function sessionEnvironment(input: SessionEnvInput): Record<string, string> {
  const env: Record<string, string> = {
    THE_LOOP_WORK_ITEM: input.workItem,
    PATH: [input.binDir, input.basePath ?? process.env.PATH ?? ""].filter(Boolean).join(delimiter),
  };
  if (input.configFile && existsSync(input.configFile)) env.THE_LOOP_CLI_CONFIG = input.configFile;
  return env;
}
