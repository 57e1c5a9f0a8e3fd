import type { RoutingConfig } from "../config/schema.js";

/**
 * Who may steer the-loop. The allowlist is the only thing standing between anyone who can comment
 * on a work item and an agent running on this machine, so it fails closed: no list, no actions.
 */

/**
 * Exact, case-sensitive match: logins are compared as the tracker reports them, because folding
 * case here would be a second, weaker notion of identity than the tracker's own.
 *
 * A null actor is allowed: ingresses give it only to events no person did (a status change, an
 * item closing), which carry no text a person wrote, and the later guards (a close only ends the-loop's own session)
 * bound what they can do. A person the tracker cannot name arrives as `ghost`, never as null.
 */
export function isAuthorized(actor: string | null, authorized: ReadonlySet<string>): boolean {
  return actor === null || authorized.has(actor);
}

/** Said once at start-up, so an empty allowlist never looks like a silent bug. */
export function failClosedWarning(routing: Pick<RoutingConfig, "authorizedUsers">): string | undefined {
  if (routing.authorizedUsers.length > 0) return undefined;
  return [
    "routing.authorizedUsers is empty, so the-loop acts on nothing a person does:",
    "comments, reviews, labels and new work items are dropped as unauthorized (fail closed).",
    "List the logins it should act on in the config, for example:",
    "  routing:",
    "    authorizedUsers: [your-login]",
  ].join("\n");
}
