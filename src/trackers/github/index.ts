export { GitHubClient, githubApiUrl, nextLink, refHostForApiUrl } from "./client.js";
export type { GetResult, GitHubClientOptions, ListResult, LoopOctokitInstance, RequestParams } from "./client.js";
export { GitHubAuthError, GitHubError, GitHubNotFoundError, GitHubRateLimitError, UnsupportedGitHubHostError, githubErrorFrom } from "./errors.js";
export { githubTokenSource, missingTokenMessage, runGhAuthToken } from "./token.js";
export type { GhRunner, GitHubTokenSourceOptions, TokenSource } from "./token.js";
export { GitHubTracker, workItemStateOf } from "./tracker.js";
export type { GitHubIssueJson, GitHubTrackerOptions, PullRequestInfo } from "./tracker.js";
export { SELF_LOGIN_SETTING } from "./self-login.js";
export type { SelfLoginRetry } from "./self-login.js";
