/**
 * The CI family of the event catalog (catalog.ts takes it in): what became of a CI failure on a
 * session's pull request (docs/github.md#ci-failures). The same field specs and rules as the rest
 * of the catalog.
 */
export const CI_EVENTS = {
  "ci.delivered": {
    family: "ci",
    level: "info",
    summary:
      "A CI failure on a pull request reached the session of its work item (docs/github.md#ci-failures): `attempt` of `max_attempts`; `log` says whether the log tail was in it (tail), withheld (the pull request's author is not authorized), or none.",
    fields: {
      work_item: "string",
      delivery_id: "string",
      pull_request: "string",
      check: "string",
      conclusion: "string",
      attempt: "integer",
      max_attempts: "integer",
      log: "string",
    },
  },
  "ci.gave_up": {
    family: "ci",
    level: "warning",
    summary:
      "A pull request failed CI again after its session was told `attempts` times (routing.feedback.maxCiFixAttempts): no more are delivered, and a marked comment on it asks a person (`commented` false: posting it failed).",
    fields: { work_item: "string", pull_request: "string", check: "string", attempts: "integer", commented: "boolean" },
  },
} as const;
