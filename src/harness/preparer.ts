import { homedir } from "node:os";
import type { RoutingConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import { claudeConfigFile, ensureClaudeTrust, trustScope } from "./claude-trust.js";
import { prepareCodexTrust } from "./codex-preparer.js";
import { prepareGemini } from "./gemini-preparer.js";

/**
 * What a harness needs settled before it starts in a folder, run before each spawn and respawn.
 * Today that is Claude Code's folder trust; it never fails the spawn it precedes.
 */
export type HarnessPreparer = (input: HarnessPreparation) => Promise<void>;

export interface HarnessPreparation {
  readonly workItem: string;
  /** The adapter's name: `claude`, `cursor`, or a command harness's. */
  readonly harness: string;
  readonly cwd: string;
  /** The routing in force now (it is reloaded live). */
  readonly routing: RoutingConfig;
  /** The environment the harness will run with: where its config lives. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface HarnessPreparerOptions {
  readonly events: EventSink;
  /** Where checkouts live: the folder the `workspace-root` scope trusts. */
  readonly workspaceRoot: string;
}

export function harnessPreparer(options: HarnessPreparerOptions): HarnessPreparer {
  return async ({ workItem, harness, cwd, routing, env }) => {
    if (harness === "gemini" && routing.harnessTrust.enabled) return prepareGemini(options, { workItem, cwd, routing, env });
    if (harness === "codex" && routing.harnessTrust.enabled) return await prepareCodexTrust(options.events, workItem, cwd, env);
    // Only Claude Code asks; a command harness that wraps it is the operator's to configure.
    if (harness !== "claude" || !routing.harnessTrust.enabled) return;
    const home = env.HOME || homedir();
    const scope = trustScope({ spawnDir: cwd, scope: routing.harnessTrust.scope, workspaceRoot: options.workspaceRoot, home });
    const file = claudeConfigFile(env);
    const outcome = await ensureClaudeTrust({ file, dirs: scope.dirs });
    const narrowed = scope.narrowed === undefined ? {} : { note: scope.narrowed };
    if (outcome.kind === "failed") {
      options.events.emit("workspace.trust_failed", {
        work_item: workItem,
        file: outcome.file,
        dirs: [...outcome.dirs],
        error: `${outcome.error}; the session starts anyway and may stop on Claude Code's trust dialog (see docs/agents.md)`,
      });
      return;
    }
    if (outcome.kind === "written" || scope.narrowed !== undefined) {
      options.events.emit("workspace.trusted", {
        work_item: workItem,
        file: outcome.file,
        dirs: [...outcome.dirs],
        written: outcome.kind === "written",
        ...narrowed,
      });
    }
  };
}
