/**
 * Events and CLI commands reach the daemon that owns their work item when several share one
 * database (docs/scale.md, "Many daemons, one database"): the pure decisions, the daemon's side
 * of the inbox, and the CLI's. Importers name the module itself; this file is the list the
 * layering rule reads.
 */
export { MAX_HOPS, commandRoute, daemonLive, eventKey, fleetView, inboxAnnouncement, inboxTurn, liveOwner } from "./decide.js";
export type { CommandRoute, FleetView, InboxAnnouncement, InboxTurn } from "./decide.js";
export { Forwarder } from "./forwarder.js";
export type { FleetRows, ForwarderOptions, InboxHandlers, ListenClient, Refusal } from "./forwarder.js";
export { checkedCommand, commandBodySchema, forwardCommand, routeOf } from "./commands.js";
export type { CommandBody, CommandForwarding } from "./commands.js";
export { ownerHandlers } from "./owner.js";
export type { OwnerDeps } from "./owner.js";
export { commandForwardingOn, daemonInboxHandlers, forwardingOn, leaseSettingsOf } from "./open.js";
export type { ForwardingSettings } from "./open.js";
