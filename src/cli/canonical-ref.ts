import { UsageError } from "../errors.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../workitem/index.js";
import type { ProjectConfig } from "./context.js";

/**
 * Apart from the sessions commands: `graph status`, `why` and `ask` take a ref too, and importing
 * it from there would load the registry, control and tracker modules into each of their starts.
 */

/** A work item ref as the user typed it (`#7`, `owner/repo#7`, a URL), in canonical form. */
export function canonicalRef(text: string, project: Pick<ProjectConfig, "config">): string {
  try {
    return formatWorkItemRef(parseRefInput(text, { defaultLocalProject: project.config.integrations.local.project }).ref);
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(error.message);
    throw error;
  }
}
