import { messageOf } from "../errors.js";
import { resolveGitHubCheck } from "../feedback/index.js";
import type { InboundEvent } from "../routing/inbound.js";
import { RETRY, SETTLED, deliveryEvents, dispatchFailed } from "../sessions/context.js";
import type { DispatcherOptions, HandleResult } from "../sessions/context.js";

/**
 * A GitHub CI failure, which names its pull request only by its head commit (a fork's, not at
 * all), resolved to its pull requests (feedback/github.ts), each then handled as any event by
 * `handle`. Its order among the item's other events does not matter: it is a status, not a
 * conversation turn.
 */
export async function resolveCheck(
  options: Pick<DispatcherOptions, "events" | "trackers">,
  authorizedUsers: ReadonlySet<string>,
  event: InboundEvent,
  handle: (event: InboundEvent) => Promise<HandleResult>,
): Promise<HandleResult> {
  const github = options.trackers.github;
  let resolved: InboundEvent[] = [];
  try {
    if (github !== undefined) resolved = await resolveGitHubCheck(event, { tracker: github, authorizedUsers });
  } catch (error) {
    dispatchFailed(
      deliveryEvents(options.events, event.workItems[0]?.ref ?? "", event.deliveryId),
      "route",
      `the CI failure's pull request could not be looked up: ${messageOf(error)}`,
      true,
    );
    return RETRY;
  }
  if (resolved.length === 0) {
    options.events.emit("routing.dropped", { reason: "no-work-item", delivery_id: event.deliveryId, kind: event.kind, actor: undefined });
    return SETTLED;
  }
  const results = await Promise.all(resolved.map((one) => handle(one)));
  return results.every((result) => result.settled) ? SETTLED : RETRY;
}
