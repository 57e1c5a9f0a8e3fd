/**
 * `status` and the notification sinks (docs/notifications.md): a sink whose last notification
 * from the running daemon was given up is a problem, since a person waits for what it does not
 * bring. Pure, over the event log's tail; it names the sink and its URL variable, never a URL.
 */

import type { LoggedEvent, StatusProblem } from "./problems.js";

export interface NotifySinkFailure {
  readonly sink: string;
  /** The sink's `urlEnv`, when the config still names the sink. */
  readonly urlEnv?: string | undefined;
  readonly at: string;
  readonly moment: string;
  readonly workItem: string;
  readonly error: string;
}

/**
 * Each sink whose last outcome by one of `pids` (the running daemon) is a notification given up
 * (`notify.failed`, `will_retry: false`); a `notify.sent` after it clears it.
 */
export function notifySinkFailuresOf(
  events: readonly LoggedEvent[],
  pids: ReadonlySet<number>,
  sinks: readonly { readonly name: string; readonly urlEnv: string }[],
): NotifySinkFailure[] {
  const last = new Map<string, LoggedEvent>();
  for (const event of events) {
    if (event.pid === undefined || !pids.has(event.pid) || typeof event.sink !== "string") continue;
    if (event.event === "notify.sent" || (event.event === "notify.failed" && event.will_retry === false)) last.set(event.sink, event);
  }
  const text = (event: LoggedEvent, key: string): string => (typeof event[key] === "string" ? (event[key] as string) : "?");
  return [...last.entries()]
    .filter(([, event]) => event.event === "notify.failed")
    .map(([sink, event]) => ({
      sink,
      urlEnv: sinks.find((entry) => entry.name === sink)?.urlEnv,
      at: event.ts,
      moment: text(event, "moment"),
      workItem: text(event, "work_item"),
      error: text(event, "error"),
    }));
}

export function notifySinkProblems(failures: readonly NotifySinkFailure[]): StatusProblem[] {
  return failures.map((failure) => ({
    code: "notify-sink-failing",
    message: `notifications to the sink ${failure.sink} are not arriving: the last one (${failure.moment}, ${failure.workItem}) was given up at ${failure.at}: ${failure.error}`,
    fix:
      `check the URL in ${failure.urlEnv ?? "the sink's urlEnv variable"} (set it in the environment the daemon is started from, then \`the-loop stop && the-loop start\`); ` +
      "`the-loop events --type 'notify.*'` shows each try (docs/notifications.md)",
  }));
}
