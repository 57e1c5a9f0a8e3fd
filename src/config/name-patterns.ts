/** A local tracker project's name. */
export const LOCAL_PROJECT_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$";
/** `owner/repo`, or `host/owner/repo` for GitHub Enterprise. */
export const GITHUB_REPOSITORY_PATTERN = "^(?:[A-Za-z0-9.-]+(?::[0-9]{1,5})?/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9._-]{1,100}$";
