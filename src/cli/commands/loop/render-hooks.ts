import { dirname } from "node:path";
import { hookEnvelope } from "../../../capabilities/active.js";
import { loadCapabilities } from "../../../capabilities/load.js";
import { LOOP_POINTS } from "../../../capabilities/manifest.js";
import type { LoopPoint } from "../../../capabilities/manifest.js";
import type { LoadedConfig } from "../../../config/load.js";
import { EXIT_FAILURE, ExitError, UsageError } from "../../../errors.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../../../workitem/ref.js";
import { loadCommandConfig, printConfigWarnings } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import { stdout } from "../../output.js";

export interface LoopRenderHooksOptions {
  readonly workItem?: string;
  readonly raw: boolean;
  readonly json: boolean;
}

const POINT_LIST = `the loop points are ${LOOP_POINTS.join(", ")}`;

/**
 * `point` as one of the twelve loop points, or the error that lists them. It exits 1, not 2, as
 * gsd-core's `loop render-hooks` does: a documented exception to the-loop's exit statuses
 * (README, "Exit statuses"), so a host written for gsd-core reads the same status.
 */
export function loopPointOf(point: string): LoopPoint {
  if ((LOOP_POINTS as readonly string[]).includes(point)) return point as LoopPoint;
  if (point === "execute:task") {
    throw new ExitError(
      `execute:task has no hooks to render: it is resolved for each task of a plan, by \`the-loop task resolve-content --plan PATH --task-id ID\`; ${POINT_LIST}`,
      EXIT_FAILURE,
      "usage",
    );
  }
  throw new ExitError(`Invalid loop point: ${JSON.stringify(point)}; ${POINT_LIST}`, EXIT_FAILURE, "usage");
}

/** The work item named on the command line, checked as a ref (a bare 7 is in the default local project). */
function checkedRef(text: string, loaded: LoadedConfig): string {
  try {
    return formatWorkItemRef(parseRefInput(text, { defaultLocalProject: loaded.config.integrations.local.project }).ref);
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(`--work-item: ${error.message}`);
    throw error;
  }
}

/**
 * `the-loop loop render-hooks POINT`: the capability hooks active at the point, for the session
 * (or a person) to act on. Reads only: it records no event, since an agent asks at every point.
 * `--work-item` is checked but changes nothing yet — a capability's config is the operator's, not
 * the work item's.
 */
export async function runLoopRenderHooks(globals: GlobalOptions, pointArgument: string, options: LoopRenderHooksOptions): Promise<void> {
  const point = loopPointOf(pointArgument);
  const loaded = await loadCommandConfig(globals);
  printConfigWarnings(loaded);
  if (options.workItem !== undefined) checkedRef(options.workItem, loaded);
  const configFile = loaded.source.path ?? undefined;
  const capabilities =
    loaded.config.capabilities.length === 0
      ? []
      : await loadCapabilities(loaded.config, configFile !== undefined ? dirname(configFile) : loaded.baseDir, configFile !== undefined ? { configFile } : {});
  const envelope = hookEnvelope(capabilities, point);
  if (options.raw || options.json) {
    stdout.json(envelope);
    return;
  }
  stdout.line(envelope.rendered);
}
