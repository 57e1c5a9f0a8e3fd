import { z } from "zod";
import { readFileSync } from "node:fs";
import type { CliConfig } from "../config/schema.js";
import type { StatePaths } from "../state/layout.js";

/**
 * The services a daemon runs. Each holds its own pidfile lock for as long as it runs: that lock,
 * not a process being alive, is what "started" means to `start`, `status` and `stop`.
 */
export type ServiceName = "poller" | "gh-webhook";

export interface ServiceSpec {
  readonly name: ServiceName;
  readonly enabled: boolean;
  readonly pidfile: string;
}

export function servicesOf(config: CliConfig, paths: StatePaths): ServiceSpec[] {
  return [
    { name: "poller", enabled: config.polling.enabled, pidfile: paths.pollPidfile },
    { name: "gh-webhook", enabled: config.webhooks.ghWebhook.enabled, pidfile: paths.ghWebhookPidfile },
  ];
}

export const NOTHING_TO_RUN =
  "no service is enabled, so there is nothing to run: enable the poller with `polling: {enabled: true, sources: [{provider: local}]}` " +
  "or the webhook receiver with `webhooks: {ghWebhook: {enabled: true}}` in the config";

/**
 * Where the running receiver says it listens. The pidfile only names a process; the address
 * (the port may be chosen at start, `port: 0`) is written here once the receiver listens, and is
 * believed only while the pidfile's live holder is the process that wrote it.
 */
export interface WebhookListening {
  readonly pid: number;
  readonly host: string;
  readonly port: number;
  readonly path: string;
  /** Whether signatures are checked (false: insecureAllowUnsigned without a secret). */
  readonly verified: boolean;
  readonly since: string;
}

/** The file as the receiver writes it; a file without the address fields names no receiver, other keys are ignored. */
const webhookListeningSchema = z.object({
  pid: z.number(),
  host: z.string(),
  port: z.number(),
  path: z.string(),
  verified: z.unknown().optional(),
  since: z.unknown().optional(),
});

export function readWebhookListening(path: string): WebhookListening | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
  const listening = webhookListeningSchema.safeParse(value);
  if (!listening.success) return undefined;
  const { pid, host, port, path: urlPath, verified, since } = listening.data;
  return { pid, host, port, path: urlPath, verified: verified === true, since: typeof since === "string" ? since : "" };
}

/** `http://host:port/path`, with an IPv6 address bracketed. */
export function listeningUrl(listening: Pick<WebhookListening, "host" | "port" | "path">): string {
  const host = listening.host.includes(":") ? `[${listening.host}]` : listening.host;
  return `http://${host}:${listening.port}${listening.path}`;
}
