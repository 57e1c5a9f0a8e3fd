export { inboundFromChange } from "./local-source.js";
export {
  MAX_HANDLED_IDS,
  POLL_STATE_VERSION,
  PollStateError,
  capHandled,
  emptyPollState,
  loadPollState,
  savePollSources,
  savePollState,
} from "./poll-state.js";
export type { PollSourceState, PollState } from "./poll-state.js";
export { DEFAULT_MAX_ATTEMPTS, Poller, localPollSources } from "./poller.js";
export type { CycleSummary, EventHandler, HandleResult, PollSourceRuntime, PollerOptions, PollerStatus, SourceClaims, SourcePlace } from "./poller.js";
export { inboundFromGitHub } from "./github-events.js";
export type { GitHubEventContext, NormalizeResult } from "./github-events.js";
export { branchIssueNumber, closingReferences } from "./github-links.js";
export type { RepositoryContext } from "./github-links.js";
export { DEFAULT_DEDUPE_SIZE, WebhookReceiver } from "./webhook/server.js";
export type { WebhookAddress, WebhookReceiverOptions, WebhookRejection } from "./webhook/server.js";
export { WebhookSecretError, webhookSecret } from "./webhook/secret.js";
export type { WebhookSecret } from "./webhook/secret.js";
export { GitHubChecksFeed, GitHubFeed } from "./github-feed/index.js";
export type { GitHubChecksFeedOptions, GitHubFeedOptions, GitHubReader } from "./github-feed/index.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { resolvePollStateFile } from "./legacy-poll-state.js";
