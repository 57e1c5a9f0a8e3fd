export { GitHubFeed } from "./reader.js";
export type { GitHubFeedOptions } from "./reader.js";
export type { GitHubReader } from "./conditional.js";
