export { CONFIG_DIR_NAME, CONFIG_ENV, CONFIG_FILE_NAME, ConfigError, baseDirFor, discoverConfig, loadConfig } from "./load.js";
export type { ConfigOrigin, ConfigSource, LoadOptions, LoadedConfig } from "./load.js";
export { formatPath, parseConfigText } from "./parse.js";
export type { ParseOutcome } from "./parse.js";
export { escapeControlCharacters, formatProblem } from "./problem.js";
export type { ConfigProblem } from "./problem.js";
export { configSchema } from "./schema.js";
export type { CliConfig, CliConfigInput, SandboxMode } from "./schema.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export type { CapabilityEntryConfig } from "./capability-schema.js";
export { LOOPBACK_HOSTS, dashboardSchema } from "./dashboard-schema.js";
export type { DashboardConfig } from "./dashboard-schema.js";
export { capabilityEntrySchema } from "./capability-schema.js";
export { BUILTIN_GRAPH_NAMES, GRAPH_NAME_MAX, GRAPH_NAME_PATTERN } from "./graph-schema.js";
export type { GraphConfig } from "./graph-schema.js";
export { NOTIFY_MOMENTS, NOTIFY_SINK_KINDS } from "./notify-schema.js";
export type { NotifyConfig, NotifyMoment, NotifySinkConfig, NotifySinkKind } from "./notify-schema.js";
export { HOOK_NAME_PATTERN, hookEntrySchema, hooksSchema } from "./hooks-schema.js";
export { configJsonSchema, configJsonSchemaText } from "./json-schema.js";
export { DISCOVERY_PLACES, elsewhereNote } from "./load.js";
export { offsetOf } from "./parse.js";
export { redactSecrets, secretPaths } from "./redact.js";
export {
  BUILTIN_HARNESSES,
  CONTROL_COMMANDS,
  DEFAULT_CONTROL_KEYWORDS,
  DEFAULT_GITHUB_API_URL,
  GITHUB_WEBHOOK_EVENTS,
  githubIntegrationSchema,
  SPAWN_POLICIES,
} from "./schema.js";
export type {
  ControlCommand,
  ControlConfig,
  FeedbackConfig,
  FeedbackReaction,
  GhWebhookConfig,
  GitHubIntegrationConfig,
  HarnessConfig,
  HarnessTrustScope,
  PollSource,
  ReactionsConfig,
  RoutingConfig,
  SpawnPolicy,
  WorkspaceConfig,
} from "./schema.js";
export { STATE_STORES } from "./schema.js";
export type { StateStore } from "./schema.js";
export { resolveStateStore } from "./state-store.js";
export type { ResolvedStateStore, StateStoreSettings } from "./state-store.js";
export { projectNameFor, starterConfigText, STATE_GITIGNORE } from "./starter.js";
export { legacyPollStateMove, movePollStateFile, upgradeConfigText, upgradeOffers } from "./upgrade/config.js";
export { webhookEventsOffers } from "./upgrade/webhook.js";
export type { WebhookEventsOffer, WebhookEventsSettings } from "./upgrade/webhook.js";
export type { ConfigInsertion, DecisionNeeded, UpgradeOffer } from "./upgrade/config.js";
export { closestName, editDistance } from "./suggest.js";
