import type { EventSink } from "../events/log.js";
import type { InboundEvent, LinkSource } from "../routing/inbound.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { WorkItemNotFoundError } from "../trackers/tracker.js";
import { parseWorkItemRef } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import type { PullRequestLink, PullRequestLinks } from "../registry/pr-links.js";
import { isLive } from "../registry/record.js";
import type { SessionRegistry } from "../registry/registry.js";

/**
 * How a pull request's events find the session of the work item it belongs to. The ingress names
 * what the event itself says (closing references, an item number in the head branch); a stored
 * binding adds what earlier events or a person established. Both only reorder the event's work
 * items: the router still decides which of them gets the event.
 */

/** The event with its pull request's stored binding applied, and the binding itself. */
export interface Linked {
  readonly event: InboundEvent;
  readonly link?: PullRequestLink;
}

/**
 * Applies the stored binding of the event's pull request. An explicit binding is the whole
 * answer — the bound item, then the PR (whatever else the event inferred is dropped, so a stale
 * `Fixes #13` cannot pull the event elsewhere). An inferred one puts its item in front when the
 * event does not name it already. The first work item is the event's queue, so events on a
 * bound PR queue with the work item's own events.
 */
export function applyLink(event: InboundEvent, links: PullRequestLinks | undefined, onProblem: (problem: string) => void): Linked {
  const pullRequest = event.pullRequest;
  if (pullRequest === undefined) return { event };
  // A pull request's closing keeps its linked items too: it reaches the work item's session as
  // news, and the router lets it end only the PR's own session (see route).
  if (links === undefined) return { event };
  const { link, problem } = links.lookup(pullRequest.ref);
  if (problem !== undefined) onProblem(problem);
  if (link === undefined || link.workItem.ref === pullRequest.ref) return { event };
  const bound = link.workItem;
  if (link.source === "explicit") {
    const own = event.workItems.find((item) => item.ref === pullRequest.ref);
    const workItems: WorkItem[] = own === undefined ? [bound] : [bound, own];
    return { event: { ...event, workItems, linkedBy: { [bound.ref]: "explicit" } }, link };
  }
  if (event.workItems.some((item) => item.ref === bound.ref)) return { event, link };
  const linkedBy: Record<string, LinkSource> = { ...event.linkedBy, [bound.ref]: link.source };
  return { event: { ...event, workItems: [bound, ...event.workItems], linkedBy }, link };
}

type Outcome = { readonly exists: boolean; readonly at: number };

export interface LinkedItemCheckOptions {
  readonly trackers: TrackerSet;
  readonly registry: SessionRegistry;
  readonly events: EventSink;
  readonly now: () => Date;
  /** Outcomes remembered (default 256): a busy PR must not cost a tracker request per event. */
  readonly capacity?: number;
  /** How long "no such item" is believed (default 10 min): the issue may yet be opened. */
  readonly missingTtlMs?: number;
}

/**
 * A head branch such as `issue-12` is only a guess at a work item, so before an event goes to #12
 * on that evidence alone, #12 must exist. The check is best-effort: only the tracker saying "no
 * such item" drops the guess; any other failure keeps it.
 */
export class LinkedItemCheck {
  private readonly outcomes = new Map<string, Outcome>();
  private readonly capacity: number;
  private readonly missingTtlMs: number;

  constructor(private readonly options: LinkedItemCheckOptions) {
    this.capacity = options.capacity ?? 256;
    this.missingTtlMs = options.missingTtlMs ?? 600_000;
  }

  /** The event without the branch-inferred items that do not exist; `trusted` (a stored binding's item) is not checked. */
  async verify(event: InboundEvent, trusted?: string): Promise<InboundEvent> {
    const linkedBy = event.linkedBy;
    if (linkedBy === undefined) return event;
    const guesses = event.workItems.filter((item) => linkedBy[item.ref] === "branch" && item.ref !== trusted && item.ref !== event.pullRequest?.ref);
    if (guesses.length === 0) return event;
    const missing = new Set<string>();
    for (const item of guesses) {
      if (!(await this.exists(item.ref))) missing.add(item.ref);
    }
    if (missing.size === 0) return event;
    const pullRequest = event.pullRequest?.ref ?? event.workItems.at(-1)?.ref ?? "";
    for (const ref of missing) {
      this.options.events.emit("routing.linkage_dropped", { pull_request: pullRequest, work_item: ref, reason: "not-found" });
    }
    const remaining: Record<string, LinkSource> = {};
    for (const [ref, source] of Object.entries(linkedBy)) if (!missing.has(ref)) remaining[ref] = source;
    return { ...event, workItems: event.workItems.filter((item) => !missing.has(item.ref)), linkedBy: remaining };
  }

  private async exists(ref: string): Promise<boolean> {
    if (this.ownedByLiveSession(ref)) return true;
    const now = this.options.now().getTime();
    const known = this.outcomes.get(ref);
    if (known !== undefined && (known.exists || now - known.at < this.missingTtlMs)) {
      this.remember(ref, known);
      return known.exists;
    }
    let exists: boolean;
    try {
      await this.options.trackers.forRef(ref).getItem(parseWorkItemRef(ref));
      exists = true;
    } catch (error) {
      if (!(error instanceof WorkItemNotFoundError)) return true;
      exists = false;
    }
    this.remember(ref, { exists, at: now });
    return exists;
  }

  private ownedByLiveSession(ref: string): boolean {
    try {
      return isLive(this.options.registry.get(ref));
    } catch {
      // A damaged record is the router's to report; it does not decide whether the item exists.
      return false;
    }
  }

  /** A Map iterates in insertion order: re-inserting makes an entry the newest, the first is the oldest. */
  private remember(ref: string, outcome: Outcome): void {
    this.outcomes.delete(ref);
    this.outcomes.set(ref, outcome);
    if (this.outcomes.size > this.capacity) {
      const oldest = this.outcomes.keys().next();
      if (oldest.done !== true) this.outcomes.delete(oldest.value);
    }
  }
}
