/**
 * Losing a host when daemons share one database (docs/scale.md, "Losing a host"): each session's
 * watchdog, which ends the harness once its owner's lease lapsed, and the adoption of a lost
 * daemon's items by another. Importers name the module itself; this file is the list the
 * layering rule reads.
 */
export { fencedRunner, watchdogLogOf } from "./fence.js";
export { WatchedRunner, startWatchdog, watchdogProgram } from "./watchdog.js";
export type { WatchdogSettings } from "./watchdog.js";
export { parseWatchdogSpec } from "./watchdog-spec.js";
export type { WatchdogSpec } from "./watchdog-spec.js";
export { Adopter } from "./adopt.js";
export type { AdopterOptions } from "./adopt.js";
export { TAIL_EVERY_MS, TAIL_MAX_CHARS, TAIL_MAX_LINES, adoptionBootNote, adoptionComment, tailLines, transcriptTail } from "./tail.js";
export { TailKeeper } from "./tail-keeper.js";
export type { TailKeeperOptions } from "./tail-keeper.js";
export { watchLostHosts } from "./watch.js";
export type { LostHostsOptions } from "./watch.js";
