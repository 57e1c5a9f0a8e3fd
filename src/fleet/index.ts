/**
 * Which daemon owns each work item when several share one database (docs/scale.md): the pure
 * decisions and the leases' heartbeat. Importers name the module itself; this file is the list
 * the layering rule reads.
 */
export { fleetBounds, leaseDecision, lostAfterBeat, nameDecision, reclaimDecision, releasable } from "./decide.js";
export type { FleetBounds, LeaseDecision, NameDecision, ReclaimDecision } from "./decide.js";
export { LeasedOwnership, OwnedElsewhereError, soleOwner } from "./ownership.js";
export type { DaemonIdentity, LeasedOwnershipOptions, Ownership } from "./ownership.js";
