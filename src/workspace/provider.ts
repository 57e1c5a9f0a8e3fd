import type { SessionWorkspace } from "../registry/record.js";
import type { WorkItem } from "../workitem/index.js";

/** What a spawn asks of the workspace: the pull request head to check out, when there is one. */
export interface WorkspaceRequest {
  readonly branch?: string;
  /** False for a fork's branch, which the shared clone cannot fetch: the default branch is used. */
  readonly headInRepository?: boolean;
}

/**
 * The seam between the dispatcher and checkouts. `prepare` runs before a session's harness
 * starts; `release` when the session closes. The dispatcher never calls git itself.
 */
export interface WorkspaceProvider {
  /** The checkout the session runs in; undefined when the work item gets none (a local item). */
  prepare(workItem: WorkItem, request: WorkspaceRequest): Promise<SessionWorkspace | undefined>;
  /** Removes the checkout unless the configuration keeps it; never throws (reports instead). */
  release(ref: string, workspace: SessionWorkspace): Promise<void>;
}
