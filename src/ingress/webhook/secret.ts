import type { GhWebhookConfig } from "../../config/schema.js";
import { EXIT_USAGE, ExitError } from "../../errors.js";
import { rememberSecret } from "../../secrets.js";

/**
 * The webhook secret, read from the environment variable the config names (never from the
 * config itself). Kept apart from the server so `the-loop start` can refuse early without
 * loading it.
 */

export type WebhookSecret = { readonly mode: "signed"; readonly secret: string } | { readonly mode: "unsigned" };

export class WebhookSecretError extends ExitError {
  override readonly name: string = "WebhookSecretError";
  constructor(readonly secretEnv: string) {
    super(
      `the webhook receiver needs its secret: set ${secretEnv} to the secret configured on the GitHub webhook ` +
        `(webhooks.ghWebhook.secretEnv names the variable), or set webhooks.ghWebhook.insecureAllowUnsigned: true ` +
        `to accept unsigned deliveries (anyone who can reach the port can then drive sessions)`,
      EXIT_USAGE,
      "config",
    );
  }
}

/** Throws WebhookSecretError when the variable is unset or empty and unsigned deliveries are not allowed. */
export function webhookSecret(config: Pick<GhWebhookConfig, "secretEnv" | "insecureAllowUnsigned">, env: NodeJS.ProcessEnv = process.env): WebhookSecret {
  const secret = env[config.secretEnv];
  if (secret !== undefined && secret !== "") {
    rememberSecret(secret);
    return { mode: "signed", secret };
  }
  if (config.insecureAllowUnsigned) return { mode: "unsigned" };
  throw new WebhookSecretError(config.secretEnv);
}
