import { CI_WEBHOOK_EVENTS } from "../schema.js";

/**
 * `upgrade-config` and the CI events (docs/github.md#ci-failures): the receiver now acts on
 * `check_run`, `check_suite` and `status`. A config without its own `webhooks.ghWebhook.events`
 * gets them with the default; one that lists its events keeps its list — it is the operator's
 * choice — and is told, by hand, what to add here and on GitHub.
 */

/** What the offer reads of the loaded config. */
export interface WebhookEventsSettings {
  readonly webhooks: { readonly ghWebhook: { readonly events: readonly string[] } };
}

/** The by-hand offer to add the CI events the config's own list leaves out; none when none is missing (or no config is given). */
export interface WebhookEventsOffer {
  readonly action: "add-webhook-events";
  readonly flag: null;
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

export function webhookEventsOffers(config: WebhookEventsSettings | undefined): WebhookEventsOffer[] {
  const missing = config === undefined ? [] : CI_WEBHOOK_EVENTS.filter((name) => !config.webhooks.ghWebhook.events.includes(name));
  if (missing.length === 0) return [];
  return [
    {
      action: "add-webhook-events",
      flag: null,
      from: "webhooks.ghWebhook.events",
      to: `webhooks.ghWebhook.events + [${missing.join(", ")}]`,
      why:
        "the receiver now acts on CI failures of a session's pull requests (docs/github.md#ci-failures), but this config's own events list leaves them out; " +
        "add them by hand (an explicit list is the operator's choice, so the upgrade does not change it), and tick Check runs, Check suites and Statuses in the webhook's settings on GitHub",
    },
  ];
}
