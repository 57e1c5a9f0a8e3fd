import { UsageError } from "../errors.js";
import { RefError, formatWorkItemRef, parseRefInput, parseWorkItemRef } from "../workitem/index.js";
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

/**
 * A ref written in full (`local:demo#1`, `github:owner/repo#7`) in canonical form, or undefined
 * for anything else: inside a session there is no config to read a short ref (`#7`) against.
 */
export function fullRefOf(text: string): string | undefined {
  try {
    return formatWorkItemRef(parseWorkItemRef(text));
  } catch {
    // Not a full ref: the caller refuses it by name.
    return undefined;
  }
}
