import { UsageError } from "../errors.js";
import type { ControlOutcome, ControlRequest } from "../control/types.js";
import type { ClaimAnswer, ClaimRequest } from "../graph-driver/start-claim-force.js";
import type { InboundEvent } from "../routing/inbound.js";
import { boundedName } from "../sessions/names.js";
import { checkedCommand } from "./commands.js";
import type { InboxHandlers } from "./forwarder.js";

/**
 * What the owner does with the rows of its inbox (docs/scale.md, "Many daemons, one database"):
 * an event goes through its dispatch like one it received itself; a command is checked again
 * here — its shape, its operator's name, that this daemon serves the item, and that an agent's
 * claim comes from the agent of the item's session — and then run by the same dispatch the
 * daemon's socket and the CLI use, its answer the row's.
 */
export interface OwnerDeps {
  /** The daemon's ingress (its dispatcher, with the titles the dashboard notes). */
  handle(event: InboundEvent): Promise<{ readonly settled: boolean }>;
  control(request: ControlRequest): Promise<ControlOutcome>;
  graphClaim(request: ClaimRequest): Promise<ClaimAnswer>;
  /** Closes the item's live session as `sessions close` does; its tmux target, or undefined when it had none. */
  close(ref: string): Promise<string | undefined>;
  /** Why this daemon does not act on the item (unservedReason), or undefined. */
  unserved(ref: string): string | undefined;
  /** The harness of the item's session, if it has one. */
  harnessOf(ref: string): string | undefined;
  /** The config file this daemon runs (a forwarded claim is judged under the owner's config). */
  readonly configFile: string | null;
}

export function ownerHandlers(deps: OwnerDeps): InboxHandlers {
  return {
    event: (event) => deps.handle(event),
    command: async (raw, _sender, item) => {
      const body = checkedCommand(raw, item);
      const actor = body.command === "graph.complete" ? body.actor.id : body.command === "control" ? body.request.actor : body.actor;
      if (boundedName(actor) !== actor) throw new UsageError(`the forwarded command's actor ${JSON.stringify(actor)} is not a name this daemon records`);
      const unserved = deps.unserved(item);
      if (unserved !== undefined) throw new UsageError(unserved);
      switch (body.command) {
        case "control":
          return deps.control(body.request);
        case "close": {
          const closed = await deps.close(item);
          return { closed: closed ?? null };
        }
        case "graph.complete":
          if (body.actor.kind === "agent" && deps.harnessOf(item) !== body.actor.id) {
            throw new UsageError(`an agent's claim comes from the agent of ${item}'s session, and this daemon's session of it runs another (or none)`);
          }
          return deps.graphClaim({ ref: item, node: body.node ?? undefined, actor: body.actor, configFile: deps.configFile });
      }
    },
  };
}
