import type { EventSink } from "../events/log.js";
import type { SessionRegistry } from "../registry/registry.js";
import type { CloseOptions } from "../sessions/close.js";
import { closeSession } from "../sessions/close.js";
import type { PostgresDatabase } from "../state/postgres/database.js";
import { PostgresInbox } from "../state/postgres/inbox.js";
import { PostgresLeases } from "../state/postgres/leases.js";
import type { CommandForwarding } from "./commands.js";
import { Forwarder } from "./forwarder.js";
import { ownerHandlers } from "./owner.js";
import type { OwnerDeps } from "./owner.js";
import type { InboxHandlers } from "./forwarder.js";

/** What forwarding reads of the config: this host's daemon's name and the lease settings (state.*). */
export interface ForwardingSettings {
  /** state.daemonName, else the host's name. */
  readonly name: string;
  readonly leaseSeconds: number;
  readonly heartbeatSeconds: number;
  /** state.adoptGraceSeconds: a lapsed lease stays its owner's this long, for forwarding as for taking the item. */
  readonly adoptGraceSeconds: number;
  /** state.forwardWaitSeconds: how long a forwarded command waits for the owner to take it, and again for its answer. */
  readonly forwardWaitSeconds: number;
  readonly events: EventSink;
}

/**
 * The lease settings of the config's state block, the grace included: without it a row addressed
 * to a daemon whose lease lapsed a moment ago would be handed to one that may not take the item
 * yet, and back, until it was given up (a forwarded comment lost with its host). The forward
 * wait too, so a CLI's command and a daemon's forwarded claim wait as the config says.
 */
export function leaseSettingsOf(state: {
  readonly leaseSeconds: number;
  readonly heartbeatSeconds: number;
  readonly adoptGraceSeconds: number;
  readonly forwardWaitSeconds: number;
}): Pick<ForwardingSettings, "leaseSeconds" | "heartbeatSeconds" | "adoptGraceSeconds" | "forwardWaitSeconds"> {
  return {
    leaseSeconds: state.leaseSeconds,
    heartbeatSeconds: state.heartbeatSeconds,
    adoptGraceSeconds: state.adoptGraceSeconds,
    forwardWaitSeconds: state.forwardWaitSeconds,
  };
}

/** The CLI's (and a daemon's socket's) side: commands sent to an item's owner. */
export function commandForwardingOn(database: PostgresDatabase, settings: ForwardingSettings): CommandForwarding {
  return {
    inbox: new PostgresInbox(database.pool),
    fleet: new PostgresLeases(database.pool),
    listener: () => database.client("forward"),
    local: settings.name,
    leaseMs: settings.leaseSeconds * 1000,
    graceMs: settings.adoptGraceSeconds * 1000,
    waitMs: settings.forwardWaitSeconds * 1000,
    events: settings.events,
  };
}

/** A daemon's inbox and its command forwarding on a shared database; none on files. */
export function forwardingOn(
  database: PostgresDatabase | undefined,
  settings: ForwardingSettings,
  warn: (message: string) => void,
): { readonly forwarder: Forwarder; readonly commands: CommandForwarding } | undefined {
  if (database === undefined) return undefined;
  const commands = commandForwardingOn(database, settings);
  const forwarder = new Forwarder({
    ...commands,
    name: settings.name,
    sweepMs: settings.heartbeatSeconds * 1000,
    warn,
    listener: () => database.client("inbox"),
  });
  return { forwarder, commands };
}

/** The owner's handlers, with `sessions close` and the session's harness read from the daemon's own stores. */
export function daemonInboxHandlers(closeOptions: CloseOptions, registry: SessionRegistry, deps: Omit<OwnerDeps, "close" | "harnessOf">): InboxHandlers {
  return ownerHandlers({
    ...deps,
    close: async (ref) => (await closeSession(closeOptions, ref, "cli"))?.tmuxTarget,
    harnessOf: (ref) => registry.get(ref)?.harness,
  });
}
