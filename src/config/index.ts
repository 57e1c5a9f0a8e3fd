export {
  CONFIG_DIR_NAME,
  CONFIG_ENV,
  CONFIG_FILE_NAME,
  ConfigError,
  baseDirFor,
  discoverConfig,
  loadConfig,
} from "./load.js";
export type { ConfigOrigin, ConfigSource, LoadOptions, LoadedConfig } from "./load.js";
export { formatPath, parseConfigText } from "./parse.js";
export type { ParseOutcome } from "./parse.js";
export { formatProblem } from "./problem.js";
export type { ConfigProblem } from "./problem.js";
export { configSchema } from "./schema.js";
export type { CliConfig, CliConfigInput } from "./schema.js";
