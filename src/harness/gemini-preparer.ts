import { homedir } from "node:os";
import type { RoutingConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import { trustScope } from "./claude-trust.js";
import { ensureGeminiConfig, geminiSettingsFile, geminiTrustedFoldersFile } from "./gemini-config.js";
import type { GeminiFileOutcome } from "./gemini-config.js";

/**
 * Gemini CLI's answers before a start (src/harness/gemini-config.ts): its folder trusted in
 * `trustedFolders.json`, the sign-in choice and nudges settled in `settings.json`, and the-loop's
 * MCP server registered there (routing.mcp.enabled) or its entry taken out. One event
 * per file that changed or could not be changed; it never fails the spawn it precedes.
 */
export async function prepareGemini(
  options: { readonly events: EventSink; readonly workspaceRoot: string },
  input: { readonly workItem: string; readonly cwd: string; readonly routing: RoutingConfig; readonly env: Readonly<Record<string, string | undefined>> },
): Promise<void> {
  const { workItem, env } = input;
  const home = env.HOME || homedir();
  const scope = trustScope({ spawnDir: input.cwd, scope: input.routing.harnessTrust.scope, workspaceRoot: options.workspaceRoot, home });
  const prepared = await ensureGeminiConfig({
    trustFile: geminiTrustedFoldersFile(env),
    settingsFile: geminiSettingsFile(env),
    dirs: scope.dirs,
    mcp: input.routing.mcp.enabled,
  });
  const dirs = [...prepared.dirs];
  const report = (outcome: GeminiFileOutcome, note: string | undefined): void => {
    if (outcome.kind === "failed") {
      options.events.emit("workspace.trust_failed", {
        work_item: workItem,
        file: outcome.file,
        dirs,
        error: `${outcome.error}; the session starts anyway and may stop on one of Gemini CLI's dialogs (see docs/agents.md)`,
      });
      return;
    }
    if (outcome.kind === "written" || note !== undefined) {
      options.events.emit("workspace.trusted", {
        work_item: workItem,
        file: outcome.file,
        dirs,
        written: outcome.kind === "written",
        ...(note === undefined ? {} : { note }),
      });
    }
  };
  report(prepared.trust, scope.narrowed);
  report(prepared.settings, prepared.settings.kind === "written" ? `set ${prepared.settings.set.join(", ")}, unset before` : undefined);
  // The same file: one that could not be read or written was reported just above.
  if (prepared.settings.kind !== "failed") {
    report(prepared.mcp, prepared.mcp.kind === "written" ? `the-loop's MCP server: ${prepared.mcp.set.join(", ")}` : undefined);
  }
}
