export {
  DEFAULT_GITHUB_HOST,
  RefError,
  TRACKER_KINDS,
  checkLocalProject,
  formatWorkItemRef,
  hostOf,
  parseRefInput,
  parseWorkItemRef,
  repositoryOf,
  sameWorkItem,
  workItemSlug,
} from "./ref.js";
export type { GitHubRef, LocalRef, LooseRefOptions, ParsedRefInput, TrackerKind, WorkItemKind, WorkItemRef } from "./ref.js";
export { githubItemUrl, workItemOf } from "./item.js";
export type { WorkItem } from "./item.js";
export { hasLabel, labelMatches, normalizeLabel } from "./label.js";
export { SELF_COMMENT_ATTRIBUTION, SELF_COMMENT_MARKER, isSelfAuthored, markSelfAuthored } from "./marker.js";
