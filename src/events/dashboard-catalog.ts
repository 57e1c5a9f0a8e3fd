/**
 * The dashboard family of the event catalog (catalog.ts takes them in): the dashboard's server
 * listening, a login URL issued and used, a request refused, and an action taken from it. No
 * event carries a login token or a session cookie: they are secrets, printed once and kept in the
 * daemon's memory as hashes.
 */
export const DASHBOARD_EVENTS = {
  "dashboard.started": {
    family: "dashboard",
    level: "info",
    summary: "The daemon serves the dashboard at `url` (`tls`: over HTTPS; `operator`: who its actions are recorded as, absent when it is read-only).",
    fields: { url: "string", tls: "boolean", operator: "string?" },
  },
  "dashboard.login_issued": {
    family: "dashboard",
    level: "info",
    summary: "A one-time login URL was given to `the-loop dashboard`, valid until `expires_at` (the URL itself is never logged).",
    fields: { expires_at: "string" },
  },
  "dashboard.logged_in": {
    family: "dashboard",
    level: "info",
    summary: "A login URL was used: the browser holds a session cookie until `expires_at`; the URL is spent.",
    fields: { expires_at: "string" },
  },
  "dashboard.refused": {
    family: "dashboard",
    level: "warning",
    summary:
      "The dashboard refused a request (`reason_code`: host, origin, login; `status`: the HTTP status). A request with no session cookie is answered 401 and not logged.",
    fields: { reason_code: "string", reason: "string", status: "integer", method: "string", path: "string" },
  },
  "dashboard.action": {
    family: "dashboard",
    level: "info",
    summary:
      "An action was taken from the dashboard, as `actor` (dashboard.operator), on `work_item` (`action`: start, stop, pause, resume, approve, request-changes, answer, close); `ok` false with `error` when it did not apply.",
    fields: { work_item: "string", action: "string", actor: "string", ok: "boolean", error: "string?" },
  },
} as const;
