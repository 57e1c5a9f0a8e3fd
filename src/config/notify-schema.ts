import { z } from "zod";

/**
 * The config's side of notifications (docs/notifications.md): the sinks a person is told through,
 * each with the moments it is told of. The URL of a sink is a secret (it is all it takes to post
 * into the channel), so the config names the environment variable that holds it, never the URL.
 */

/** The moments a person can act on, in the order docs/notifications.md lists them. */
export const NOTIFY_MOMENTS = ["gate-waiting", "question", "blocked", "budget", "failed-to-start", "ci-gave-up", "done"] as const;
export type NotifyMoment = (typeof NOTIFY_MOMENTS)[number];

/** How the body is shaped: Slack's incoming webhook, Discord's, or one JSON body both accept. */
export const NOTIFY_SINK_KINDS = ["json", "slack", "discord"] as const;
export type NotifySinkKind = (typeof NOTIFY_SINK_KINDS)[number];

export const NOTIFY_SINK_NAME_PATTERN = "^[a-z][a-z0-9-]{0,31}$";

export const notifySinkSchema = z
  .strictObject({
    name: z
      .string()
      .regex(new RegExp(NOTIFY_SINK_NAME_PATTERN), "lowercase letters, digits and '-', starting with a letter (at most 32)")
      .describe("The sink's name, unique in the list: events (`notify.sent`, `notify.failed`) name the sink by it, never by its URL."),
    kind: z
      .enum(NOTIFY_SINK_KINDS)
      .default("json")
      .describe(
        "The body posted: `slack` (`{text}`, Slack's incoming webhook), `discord` (`{content, allowed_mentions}`, Discord's webhook), or `json`: both `text` and `content` and the notification's fields under `the_loop`, which Slack and Discord alike accept and any other receiver can read.",
      ),
    urlEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name")
      .describe(
        "The environment variable holding the sink's URL (never the URL itself): the URL is a secret, redacted wherever the-loop writes. Read at each send, so a rotated URL needs no restart.",
      ),
    moments: z
      .array(z.enum(NOTIFY_MOMENTS))
      .min(1)
      .default([...NOTIFY_MOMENTS])
      .describe(`The moments this sink is told of: ${NOTIFY_MOMENTS.join(", ")} (docs/notifications.md says which events each is). Default: every one.`),
    maxAttempts: z
      .number()
      .int()
      .min(1)
      .max(20)
      .default(5)
      .describe(
        "Tries of one notification before it is given up (`notify.failed` with `will_retry: false`): a network error, a timeout, HTTP 429 or 5xx is tried again.",
      ),
    timeoutSeconds: z.number().positive().max(120).default(10).describe("Longest one POST to the sink may take."),
  })
  .describe("One place notifications are posted to.");

export const notifySchema = z
  .strictObject({
    sinks: z.array(notifySinkSchema).default([]).describe("Where notifications go. Empty: nothing is sent."),
    retry: z
      .strictObject({
        initialDelaySeconds: z.number().positive().max(600).default(1).describe("The wait before a notification's second try; it doubles at each try after."),
        maxDelaySeconds: z.number().positive().max(3_600).default(60).describe("The longest wait between two tries (a 429's Retry-After included)."),
      })
      .prefault({})
      .describe("The backoff between tries of one notification."),
    queueLimit: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(200)
      .describe(
        "Notifications waiting for one sink at most; past it the oldest is given up (`notify.failed`), so a sink that is down never holds memory without end.",
      ),
  })
  .superRefine((notify, context) => {
    const seen = new Map<string, number>();
    notify.sinks.forEach((sink, index) => {
      const earlier = seen.get(sink.name);
      if (earlier !== undefined) {
        context.addIssue({ code: "custom", path: ["sinks", index, "name"], message: `notify.sinks[${earlier}] already has the name "${sink.name}"` });
      }
      seen.set(sink.name, index);
    });
  })
  .describe(
    "Notifications a person can act on (docs/notifications.md): a gate waiting, a question asked, a blocked run, … posted to a webhook with the item's link and the comment that moves it on.",
  );

export type NotifyConfig = z.output<typeof notifySchema>;
export type NotifySinkConfig = z.output<typeof notifySinkSchema>;
