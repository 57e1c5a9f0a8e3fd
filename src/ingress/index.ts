export { inboundFromChange } from "./local-source.js";
export {
  MAX_HANDLED_IDS,
  POLL_STATE_VERSION,
  PollStateError,
  capHandled,
  emptyPollState,
  loadPollState,
  savePollState,
} from "./poll-state.js";
export type { PollSourceState, PollState } from "./poll-state.js";
export { DEFAULT_MAX_ATTEMPTS, Poller, localPollSources } from "./poller.js";
export type {
  CycleSummary,
  EventHandler,
  HandleResult,
  PollSourceRuntime,
  PollerOptions,
  PollerStatus,
} from "./poller.js";
