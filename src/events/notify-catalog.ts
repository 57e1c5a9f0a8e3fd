/**
 * The notify family of the event catalog (catalog.ts takes them in): what became of each
 * notification posted to a `notify.sinks` entry. A sink is named by its `name`, never by its URL,
 * which is a secret.
 */
export const NOTIFY_EVENTS = {
  "notify.sent": {
    family: "notify",
    level: "info",
    summary: "A notification (`moment`) about a work item was posted to the sink `sink` and taken (`status`: its HTTP status; `attempts`: the tries it took).",
    fields: { sink: "string", moment: "string", work_item: "string", event_type: "string", attempts: "integer", status: "integer" },
  },
  "notify.failed": {
    family: "notify",
    level: "warning",
    summary:
      "A try to post a notification to the sink `sink` failed (`error` says why, never with the URL); `will_retry` says whether it is tried again after a backoff. With `will_retry: false` it is given up: the tries ran out, the sink refused it (a 4xx other than 429), its URL variable is unset, the sink's queue was full (`notify.queueLimit`) or the daemon stopped.",
    fields: { sink: "string", moment: "string", work_item: "string", event_type: "string", attempt: "integer", error: "string", will_retry: "boolean" },
  },
} as const;
