export { GitHubFeed } from "./reader.js";
export type { GitHubFeedOptions } from "./reader.js";
export { GitHubChecksFeed } from "./checks.js";
export type { GitHubChecksFeedOptions } from "./checks.js";
export type { GitHubReader } from "./conditional.js";
