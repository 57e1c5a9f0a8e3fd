import { messageOf } from "../../../errors.js";
import { StartQueue, startQueueFile } from "../../../registry/start-queue.js";
import type { QueueEntry } from "../../../registry/start-queue.js";
import { listSessionRecords } from "../../../registry/listing.js";
import { ControlStore } from "../../../control/store.js";
import { admit, capText, capUsage, hasLimits } from "../../../routing/limits.js";
import type { QueuedStart } from "../../../routing/limits.js";
import type { Project } from "../../context.js";
import { stderr } from "../../output.js";

/** The project's start queue: its database's, or the state root's file. */
function queueOf(project: Project): StartQueue {
  return project.stores?.startQueue ?? new StartQueue({ file: startQueueFile(project.paths.root) });
}

/**
 * The starts waiting for a slot under routing.limits (docs/fleet.md), with their places: shown
 * unless the listing asks for a session status. A damaged queue is warned about and shows none.
 */
export function queuedStarts(project: Project, wanted: string | undefined): (QueueEntry & { readonly status: "queued"; readonly position: number })[] {
  if (wanted !== undefined) return [];
  try {
    return queueOf(project)
      .read()
      .map((entry, index) => ({ ...entry, status: "queued", position: index + 1 }));
  } catch (error) {
    stderr.warn(messageOf(error));
    return [];
  }
}

/** The queue as the caps weigh it: each entry with whether its item is paused (it keeps its place and takes no slot). */
function weighed(project: Project, entries: readonly QueueEntry[]): QueuedStart[] {
  const control = project.stores?.control ?? new ControlStore({ dir: project.paths.controlDir });
  return entries.map((entry) => {
    try {
      const standing = control.get(entry.ref);
      return { ...entry, paused: standing !== undefined && standing.clearedAt === undefined && standing.command === "pause" };
    } catch {
      // A damaged control record is no pause the queue honours (the daemon's dequeue reports it).
      return { ...entry, paused: false };
    }
  });
}

/**
 * Where `ref` waits in the start queue, as `why` tells it: its place, how many wait ahead of it,
 * and the cap that holds it (undefined: none does now, so the daemon starts it within a second).
 * Undefined when it is not queued, or the queue cannot be read (warned about).
 */
export function queuedPlace(project: Project, ref: string): { position: number; ahead: number; cap: string | undefined } | undefined {
  let entries: QueueEntry[];
  try {
    entries = queueOf(project).read();
  } catch (error) {
    stderr.warn(messageOf(error));
    return undefined;
  }
  const index = entries.findIndex((entry) => entry.ref === ref);
  const entry = entries[index];
  if (entry === undefined) return undefined;
  const live = (project.stores?.registry.list({ status: "live" }) ?? listSessionRecords(project.paths.registryDir, { status: "live" })).records.map(
    (record) => ({
      ref: record.workItem.ref,
      harness: record.harness,
    }),
  );
  const admission = admit(project.config.routing.limits, live, weighed(project, entries), entry);
  return { position: index + 1, ahead: index, cap: admission.kind === "queue" ? capText(admission.cap) : undefined };
}

/** What `status` shows of routing.limits: each cap with the live sessions under it, and how many starts wait. */
export interface LimitsStatus {
  readonly caps: { readonly cap: string; readonly live: number; readonly limit: number }[];
  readonly queued: number;
}

/** Undefined when no cap is set and nothing waits: `status` then says nothing of them. */
export function limitsStatus(project: Project): LimitsStatus | undefined {
  const limits = project.config.routing.limits;
  let queued = 0;
  try {
    queued = queueOf(project).read().length;
  } catch (error) {
    stderr.warn(messageOf(error));
  }
  if (!hasLimits(limits) && queued === 0) return undefined;
  const live = (project.stores?.registry.list({ status: "live" }) ?? listSessionRecords(project.paths.registryDir, { status: "live" })).records.map(
    (record) => ({
      ref: record.workItem.ref,
      harness: record.harness,
    }),
  );
  return { caps: capUsage(limits, live), queued };
}

/** `maxLiveSessions 2/2, perHarness.codex 0/1; 2 queued`. */
export function limitsLine(status: LimitsStatus): string {
  const caps = status.caps.length === 0 ? "no cap" : status.caps.map((cap) => `${cap.cap} ${cap.live}/${cap.limit}`).join(", ");
  return `limits: ${caps}; ${status.queued} queued`;
}

/** Where a queued start stands, as the CLI tells it. */
export interface QueuedPlace {
  readonly position: number;
  readonly ahead: number;
}

/** What a command did to a queued start, in a sentence; undefined when the queue has nothing to add. */
export function queuedSentence(command: string, ref: string, effect: string, place: QueuedPlace): string | undefined {
  if (effect === "start-pending") {
    return `${ref} waits in the start queue at position ${place.position} (${place.ahead} ahead): its session starts by itself when a slot frees`;
  }
  if (effect === "recorded" && command === "pause") {
    return `${ref} has no live session; recorded the pause: it keeps its place in the start queue (position ${place.position}) and is not started until \`the-loop sessions resume --work-item ${ref}\``;
  }
  return undefined;
}
