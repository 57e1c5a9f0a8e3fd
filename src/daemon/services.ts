import type { CliConfig } from "../config/schema.js";
import type { StatePaths } from "../state/layout.js";

/**
 * The services a daemon runs. Each holds its own pidfile lock for as long as it runs: that lock,
 * not a process being alive, is what "started" means to `start`, `status` and `stop`.
 */
export interface ServiceSpec {
  readonly name: "poller";
  readonly enabled: boolean;
  readonly pidfile: string;
}

export function servicesOf(config: CliConfig, paths: StatePaths): ServiceSpec[] {
  return [{ name: "poller", enabled: config.polling.enabled, pidfile: paths.pollPidfile }];
}

export const NOTHING_TO_RUN =
  "no service is enabled, so there is nothing to run: enable the poller with `polling: {enabled: true, sources: [{provider: local}]}` in the config";
