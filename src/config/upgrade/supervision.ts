import { routingSchema } from "../schema.js";
import { formatPath } from "../parse.js";
import { MCP_COMMENT, MCP_WHY } from "./mcp.js";

/**
 * `upgrade-config` and the supervision of the sessions' harnesses: a harness that exits or is
 * killed is now started again by the daemon within seconds, not at the item's next event, and a
 * session whose harness keeps dying ends failed to start (docs/fleet.md#supervision). Its switch
 * is made visible with its default, and reported as a decision: the daemon now acts on a
 * dead harness by itself.
 */

export function supervisionDefaults(): { readonly enabled: boolean } {
  return { enabled: routingSchema.parse({}).supervision.enabled };
}

export const SUPERVISION_COMMENT =
  " Supervision of the sessions' harnesses (added by `the-loop upgrade-config`): one that exits or\n" +
  " is killed is started again within seconds, its conversation resumed, up to maxRestarts in a row.";

export const SUPERVISION_WHY =
  "its default changes behaviour: a harness that exits or is killed is started again by the daemon within seconds, its conversation resumed, instead of at the item's next event; after maxRestarts restarts in a row its session is failed to start, with a comment on the item (docs/fleet.md#supervision). " +
  "Set it to false to leave a dead harness to the item's next event.";

/** The routing switches an upgrade adds whose default changes behaviour (`routing.<block>.enabled`), each with its comment and its decision. */
const SWITCHES: readonly (readonly [block: string, comment: string, why: string])[] = [
  ["mcp", MCP_COMMENT, MCP_WHY],
  ["supervision", SUPERVISION_COMMENT, SUPERVISION_WHY],
];

export const SWITCH_COMMENTS: readonly (readonly [string, string])[] = SWITCHES.map(([block, comment]) => [block, comment]);

/** The decisions among `added`: each switch the upgrade added. */
export function switchDecisions(routingPath: readonly string[], added: readonly string[]): { key: string; why: string }[] {
  return SWITCHES.map(([block, , why]) => ({ key: formatPath([...routingPath, block, "enabled"]), why })).filter((decision) => added.includes(decision.key));
}
