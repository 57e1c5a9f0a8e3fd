import { z } from "zod";

/**
 * The one source of truth for the CLI config: the TypeScript types (`CliConfig`), validation,
 * the published `.the-loop/cli-config.schema.json` and the reference table in `docs/config.md`
 * all come from here. Every object is strict, so a misspelt key is an error, not a silent no-op.
 *
 * Annotations beyond JSON Schema's own: `x-derivedDefault` documents a default computed from
 * another key (a path under `state.root`); `x-secret` marks a value `config show` must redact.
 */

const pathSetting = (description: string, derivedDefault: string) =>
  z.string().min(1).optional().meta({ description, "x-derivedDefault": derivedDefault });

export const stateSchema = z
  .strictObject({
    root: z
      .string()
      .min(1)
      .default(".the-loop")
      .describe(
        "Folder that holds everything the-loop generates: session records, control records, poll state, the event log, pidfiles, the local tracker and workspaces. Relative to the project directory.",
      ),
  })
  .describe("Where generated state lives.");

export const routingSchema = z
  .strictObject({
    registryDir: pathSetting(
      "Folder of session records, one JSON file per work item. Used verbatim when set.",
      "<state.root>/sessions",
    ),
  })
  .describe("Policy shared by every ingress (webhook, poller, CLI): which events reach which session.");

export const pollingSchema = z
  .strictObject({
    stateFile: pathSetting(
      "File holding the poller's cursors, ETags and seen ids. Used verbatim when set.",
      "<state.root>/sessions/poll-state.json",
    ),
  })
  .describe("The poller: pull ingress from the trackers.");

export const eventLogSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe("Record every observable step as a JSON line."),
    path: pathSetting("The event log file (JSON lines). Used verbatim when set.", "<state.root>/logs/events.jsonl"),
  })
  .describe("The event log read by `the-loop events`.");

export const ghWebhookSchema = z
  .strictObject({
    pidfile: pathSetting(
      "Pidfile of the webhook receiver; holding its lock is what makes the receiver the single instance. Used verbatim when set.",
      "<state.root>/gh-webhook.pid",
    ),
    routing: routingSchema
      .optional()
      .meta({
        deprecated: true,
        description:
          "Older spelling of the top-level `routing` block. Still read (with a warning) as if it were written at the top level; move it there.",
      }),
  })
  .describe("The GitHub webhook receiver.");

export const webhooksSchema = z
  .strictObject({
    ghWebhook: ghWebhookSchema.prefault({}),
  })
  .describe("Push ingress.");

export const LOCAL_PROJECT_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$";

export const localTrackerSchema = z
  .strictObject({
    project: z
      .string()
      .regex(new RegExp(LOCAL_PROJECT_PATTERN), "a project name is letters, digits, '.', '_' and '-' (at most 63)")
      .default("default")
      .describe(
        "Project that `the-loop item` commands use when a ref gives none (`#7` means `local:<project>#7`). Stored in lower case.",
      ),
  })
  .describe("The embedded local tracker: work items kept under `<state.root>/tracker/`, no network, no credentials.");

export const integrationsSchema = z
  .strictObject({
    local: localTrackerSchema.prefault({}),
  })
  .describe("Trackers the-loop talks to.");

export const configSchema = z
  .strictObject({
    version: z.literal(1).optional().describe("Format version of this file. Optional; the-loop writes 1."),
    state: stateSchema.prefault({}),
    routing: routingSchema.prefault({}),
    polling: pollingSchema.prefault({}),
    eventLog: eventLogSchema.prefault({}),
    webhooks: webhooksSchema.prefault({}),
    integrations: integrationsSchema.prefault({}),
  })
  .meta({
    title: "the-loop CLI config",
    description: "Configuration of the-loop's daemon and CLI (.the-loop/cli-config.yaml).",
  });

/** The config after defaults: what the rest of the code reads. */
export type CliConfig = z.output<typeof configSchema>;
/** The config as a person writes it: every key optional. */
export type CliConfigInput = z.input<typeof configSchema>;
