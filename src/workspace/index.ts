import type { WorkspaceConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { Workspaces } from "./workspaces.js";

export type { WorkspaceProvider, WorkspaceRequest } from "./provider.js";
export { Git, GitError, gitEnvironment } from "./git.js";
export type { GitRunOptions, GitRunnerOptions } from "./git.js";
export { WorkspaceError, Workspaces, workspaceLayout } from "./workspaces.js";
export type { ItemLayout, RepositoryLayout, WorkspaceStrategy, WorkspacesOptions } from "./workspaces.js";

export interface WorkspacesForOptions {
  readonly config: WorkspaceConfig;
  /** `StatePaths.workspacesDir`. */
  readonly root: string;
  readonly events: EventSink;
  /** Asked for each GitHub work item's repository (clone URL, default branch). */
  readonly trackers: Pick<TrackerSet, "forRef">;
  readonly git?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** The workspaces the configuration asks for; undefined when checkouts are turned off. */
export function workspacesFor(options: WorkspacesForOptions): Workspaces | undefined {
  const { config } = options;
  if (!config.enabled) return undefined;
  return new Workspaces({
    root: options.root,
    strategy: config.strategy,
    keepCheckoutOnClose: config.keepCheckoutOnClose,
    gitTimeoutMs: config.gitTimeoutSeconds * 1000,
    events: options.events,
    repository: async (workItem) => {
      const tracker = options.trackers.forRef(workItem.ref);
      if (tracker.repository === undefined) {
        throw new Error(`the ${tracker.kind} tracker has no repository to check out for ${workItem.ref}`);
      }
      return tracker.repository(parseWorkItemRef(workItem.ref));
    },
    ...(options.git === undefined ? {} : { git: options.git }),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
}
