/**
 * Which daemon owns each work item when several share one database (docs/scale.md): the pure
 * decisions and the leases' heartbeat. Importers name the module itself; this file is the list
 * the layering rule reads.
 */
export { fleetBounds, leaseDecision, lostAfterBeat, nameDecision, reclaimDecision, releasable } from "./decide.js";
export type { FleetBounds, LeaseDecision, NameDecision, ReclaimDecision } from "./decide.js";
export { LeasedOwnership, OwnedElsewhereError, soleOwner } from "./ownership.js";
export type { DaemonIdentity, LeasedOwnershipOptions, Ownership, TakenLease } from "./ownership.js";
export { WATCHDOG_CHECK_MS, WATCHDOG_QUERY_MS, adoptGraceProblem, adoptionDecision, watchdogReactionMs, watchdogVerdict } from "./adopt-decide.js";
export type { AdoptionDecision, LeaseLook, WatchdogVerdict } from "./adopt-decide.js";
export {
  daemonLoads,
  daemonSessionsCell,
  fleetReaderOf,
  fleetSessionsLine,
  fleetView,
  heartbeatCell,
  isLate,
  lateDaemonProblem,
  liveOfCap,
  readFleetView,
} from "./view.js";
export type { DaemonLoad, DaemonView, FleetRows, FleetView, Placement } from "./view.js";
