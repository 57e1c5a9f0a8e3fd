export {
  CONFIG_DIR_NAME,
  CONFIG_ENV,
  CONFIG_FILE_NAME,
  ConfigError,
  baseDirFor,
  discoverConfig,
  formatPath,
  formatProblem,
  loadConfig,
  parseConfigText,
} from "./load.js";
export type { ConfigOrigin, ConfigProblem, ConfigSource, LoadOptions, LoadedConfig, ParseOutcome } from "./load.js";
export { configSchema } from "./schema.js";
export type { CliConfig, CliConfigInput } from "./schema.js";
