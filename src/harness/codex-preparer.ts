import type { EventSink } from "../events/log.js";
import { codexConfigFile, codexTrustDirs, ensureCodexTrust } from "./codex-config.js";

/**
 * Codex's folder trust, settled before each start of a `codex` session: the folder Codex looks
 * trust up on (the repository's root, the main one's for a worktree) is marked trusted in
 * `$CODEX_HOME/config.toml`. Never fails the spawn it precedes; a config it could not edit is an
 * event, and the session may then stop on Codex's "Trust this folder?" screen.
 */
export async function prepareCodexTrust(events: EventSink, workItem: string, cwd: string, env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const outcome = await ensureCodexTrust({ file: codexConfigFile(env), dirs: codexTrustDirs(cwd) });
  if (outcome.kind === "failed") {
    events.emit("workspace.trust_failed", {
      work_item: workItem,
      file: outcome.file,
      dirs: [...outcome.dirs],
      error: `${outcome.error}; the session starts anyway and may stop on Codex's "Trust this folder?" screen (see docs/agents.md)`,
    });
  } else if (outcome.kind === "written") {
    events.emit("workspace.trusted", { work_item: workItem, file: outcome.file, dirs: [...outcome.dirs], written: true });
  }
}
