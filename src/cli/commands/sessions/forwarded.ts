import { hostname } from "node:os";
import type { Project } from "../../context.js";
import type { CommandBody } from "../../../forwarding/commands.js";

/**
 * A session command on a shared database whose item another live daemon owns is not run here: it
 * goes to that owner through the inbox (src/forwarding/), which checks it again and runs it, and
 * its answer is printed as a local one would be. Undefined: the command runs here, as it always
 * has (the file store; an item that is free, lapsed, or this host's daemon's).
 */

export async function answeredByOwner(project: Project, body: CommandBody): Promise<unknown> {
  const database = project.stores?.backend.database;
  if (database === undefined) return undefined;
  const [{ forwardCommand, routeOf }, { commandForwardingOn, leaseSettingsOf }] = await Promise.all([
    import("../../../forwarding/commands.js"),
    import("../../../forwarding/open.js"),
  ]);
  const settings = { ...leaseSettingsOf(project.config.state), name: project.config.state.daemonName ?? hostname(), events: project.events };
  const forwarding = commandForwardingOn(database, settings);
  const route = await routeOf(forwarding, body.command === "control" ? body.request.ref : body.ref);
  if (route.kind === "here") return undefined;
  return forwardCommand(forwarding, route, body);
}
