import { readFile, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { LoadedCapability } from "../../capabilities/load.js";
import { EXIT_FAILURE, ExitError } from "../../errors.js";
import { clip, stripControlCharacters } from "../../subprocess/index.js";
import { displayPath, loadCommandConfig, printConfigWarnings } from "../context.js";
import type { GlobalOptions } from "../context.js";
import { printJson, untilInterrupted } from "./loop/predicate.js";

export interface TaskResolveContentOptions {
  readonly plan: string;
  readonly taskId: string;
  readonly raw?: boolean;
}

/** A plan is a page of tasks, not a data file. */
const PLAN_MAX_BYTES = 4 * 1024 * 1024;
const TASKS_LISTED = 10;

async function planText(path: string): Promise<string> {
  const shown = displayPath(path);
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) throw new ExitError(`no plan at ${shown}; --plan names the plan file, relative to the current directory`, EXIT_FAILURE, "usage");
  if (!info.isFile()) throw new ExitError(`the plan ${shown} is not a regular file; --plan names the plan file`, EXIT_FAILURE, "usage");
  if (info.size > PLAN_MAX_BYTES)
    throw new ExitError(`the plan ${shown} is over ${PLAN_MAX_BYTES / 1024 / 1024} MiB; a plan is a Markdown checklist of tasks`, EXIT_FAILURE, "usage");
  return readFile(path, "utf8");
}

/**
 * `the-loop task resolve-content --plan PATH --task-id ID [--raw]`: the content of one task of a
 * plan, in either grammar. A `<task tracker-id="beads:GSD-42">` element of gsd-core's grammar is
 * answered as gsd-core answers it: `{"resolved": true, "content": {action, verify,
 * acceptanceCriteria, readFirst, done}}`, or `{"resolved": false, "reason": "no-resolver" |
 * "empty"}`, or `{"resolved": false}` for an id with no `<prefix>:`. A checklist task of the-loop's
 * grammar answers `{"resolved": true, "content": "<stdout>"}` or the same two reasons. Each of
 * those exits 0. A resolver that fails (or, for a tracker id, prints anything but a JSON object)
 * exits 1 with its error — a hard halt, never a fallback to the plan's text; so does a task id not
 * in the plan, or a plan that is not there, as gsd-core's `task resolve-content` does (a documented
 * exception to exit 2 for usage errors).
 */
export async function runTaskResolveContent(globals: GlobalOptions, options: TaskResolveContentOptions): Promise<void> {
  const planPath = resolve(options.plan);
  const { parsePlan, parseTrackerTasks, resolveTaskContent, resolveTrackerTask } = await import("../../capabilities/tasks.js");
  const text = await planText(planPath);
  const trackerTasks = parseTrackerTasks(text);
  const tasks = parsePlan(text);
  // gsd-core's element wins over a checklist item with the same id: it is the grammar the id was written in.
  const trackerTask = trackerTasks.find((task) => task.trackerId === options.taskId);
  if (trackerTask === undefined && !tasks.some((task) => task.id === options.taskId)) {
    const ids = [...trackerTasks.map((task) => task.trackerId), ...tasks.map((task) => task.id)];
    const listed = ids.slice(0, TASKS_LISTED).map((id) => clip(stripControlCharacters(id), 80));
    const more = ids.length > TASKS_LISTED ? `, and ${ids.length - TASKS_LISTED} more` : "";
    throw new ExitError(
      `${JSON.stringify(clip(stripControlCharacters(options.taskId), 80))} is not a task of the plan ${displayPath(planPath)}; ${
        ids.length === 0
          ? 'it has no tasks (gsd-core\'s <task tracker-id="beads:GSD-42"> elements, or checklist lines like "- [ ] jira-123 the title")'
          : `its tasks: ${listed.join(", ")}${more}`
      }`,
      EXIT_FAILURE,
      "usage",
    );
  }

  const loaded = await loadCommandConfig(globals);
  printConfigWarnings(loaded);
  let capabilities: readonly LoadedCapability[] = [];
  if (loaded.config.capabilities.length > 0) {
    const { loadCapabilities } = await import("../../capabilities/load.js");
    const configDir = loaded.source.path ? dirname(loaded.source.path) : loaded.baseDir;
    capabilities = await loadCapabilities(loaded.config, configDir, loaded.source.path ? { configFile: loaded.source.path } : {});
  }

  if (trackerTask !== undefined) {
    const resolution = await untilInterrupted((signal) => resolveTrackerTask(capabilities, trackerTask.trackerId, { signal }));
    if (resolution.kind === "failed") throw new ExitError(resolution.error, EXIT_FAILURE, "failure");
    const answer =
      resolution.kind === "resolved"
        ? { resolved: true, content: resolution.content }
        : resolution.reason === "not-applicable"
          ? { resolved: false }
          : { resolved: false, reason: resolution.reason };
    printJson(answer, options.raw);
    return;
  }
  const resolution = await untilInterrupted((signal) => resolveTaskContent(capabilities, options.taskId, { signal }));
  if (resolution.kind === "failed") throw new ExitError(resolution.error, EXIT_FAILURE, "failure");
  printJson(resolution.kind === "resolved" ? { resolved: true, content: resolution.content } : { resolved: false, reason: resolution.reason }, options.raw);
}
