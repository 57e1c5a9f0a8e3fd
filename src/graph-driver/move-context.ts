import type { ContextNeeds } from "../sessions/context.js";
import type { PasteContext } from "../sessions/delivery.js";

/**
 * What carrying out a graph move needs: the hooks it asks (their loop payloads carry the
 * session's usage, from the budget records), the graph setup, the trackers it posts and labels
 * on, the worktree a point runs in, and all that pasting an assignment into the session takes.
 */
export type MoveContext = PasteContext & ContextNeeds<"hooks", "budgets" | "control" | "graph" | "spawnCwd" | "stateRootTag" | "trackers">;
