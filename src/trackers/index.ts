export { WorkItemNotFoundError } from "./tracker.js";
export type {
  ChangeBatch,
  FeedTracker,
  ItemState,
  ItemThread,
  PullRequestHead,
  ReactionTarget,
  RepositoryInfo,
  SelfLogin,
  Tracker,
  TrackerChange,
  TrackerChangeFeed,
  TrackerChangeKind,
  TrackerComment,
  TrackerScope,
  WorkItemState,
} from "./tracker.js";
export {
  CorruptTrackerFileError,
  InvalidCursorError,
  LOCAL_LIMITS,
  LocalTracker,
  LocalTrackerInputError,
  NotLocalRefError,
  SELF_LOGIN,
  copyTrackerToDatabase,
  damagedTrackerRows,
  databaseItemsUrl,
  localTitlesOf,
  openLocalTracker,
} from "./local/index.js";
export type { LabelChange, LabelChangeResult, ListItemsFilter, LocalItem, LocalTrackerOptions, OpenItemInput, StateChangeResult } from "./local/index.js";
export { UnsupportedTrackerError, openTrackers } from "./resolve.js";
export { ItemTitles, TITLES_MAX, TITLE_MAX, itemTitlesFile, localTitle, titleEntriesOf } from "./titles.js";
export type { ItemTitlesOptions } from "./titles.js";
export type { OpenTrackersOptions, OpenedTrackers, TrackerSet } from "./resolve.js";
export {
  GitHubAuthError,
  GitHubClient,
  GitHubError,
  GitHubNotFoundError,
  GitHubRateLimitError,
  GitHubTracker,
  UnsupportedGitHubHostError,
  githubApiUrl,
  githubTokenSource,
  refHostForApiUrl,
  workItemStateOf,
} from "./github/index.js";
export type { GetResult, GitHubClientOptions, GitHubIssueJson, ListResult, PullRequestInfo, TokenSource } from "./github/index.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { journalRemedy } from "./local/errors.js";
export { checkActor, LOGIN_PATTERN } from "./local/index.js";
export { scanJournal } from "./local/journal.js";
