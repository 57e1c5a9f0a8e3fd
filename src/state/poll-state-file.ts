import { existsSync } from "node:fs";
import type { StatePaths } from "./layout.js";

/**
 * Poll state from before the state root existed sat at `<project>/.the-loop/poll-state.json`.
 * An upgrade keeps using that file until the operator moves it (src/ingress/legacy-poll-state.ts
 * adopts what it holds); this says which file is in use.
 */

export interface ResolvedPollStateFile {
  readonly file: string;
  /** The pre-state-root file, used because the new default does not exist yet. */
  readonly legacy: boolean;
}

/**
 * Where the poller keeps its state. A configured `polling.stateFile` is used as written (the
 * layout then has no legacy path); otherwise the legacy file wins only while it exists and the
 * new default does not, so moving it is all an operator has to do.
 */
export function resolvePollStateFile(
  paths: Pick<StatePaths, "pollStateFile" | "legacyPollStateFile">,
  exists: (path: string) => boolean = existsSync,
): ResolvedPollStateFile {
  const legacy = paths.legacyPollStateFile;
  if (legacy !== null && legacy !== paths.pollStateFile && exists(legacy) && !exists(paths.pollStateFile)) {
    return { file: legacy, legacy: true };
  }
  return { file: paths.pollStateFile, legacy: false };
}
