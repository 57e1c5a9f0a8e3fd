import type { ReactionsConfig } from "../config/schema.js";
import { messageOf } from "../errors.js";
import { bindEvents } from "../events/bound.js";
import type { EventSink } from "../events/log.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { ReactionTarget, Tracker } from "../trackers/tracker.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { parseWorkItemRef } from "../workitem/index.js";

/**
 * Reactions on the comment (or the item) an event came from, so the person who wrote it sees
 * that the-loop picked it up, and later whether it got through. They are an acknowledgement and
 * nothing depends on them: each is sent without being awaited by the dispatch it describes, and
 * a failure is recorded, never raised.
 */

export type ReactionMoment = "started" | "completed" | "failed";

export interface ReactionsOptions {
  readonly config: ReactionsConfig;
  readonly trackers: TrackerSet;
  readonly events: EventSink;
}

/** Where a reaction for `event` goes: its comment when it carries one, else its own item. */
export function reactionTargetOf(event: InboundEvent): { readonly ref: string; readonly target: ReactionTarget; readonly label: string } | undefined {
  // The event's own entity: a pull request when it is about one, else the last work item
  // (linked items are put in front of it, never behind).
  const ref = event.pullRequest?.ref ?? event.workItems.at(-1)?.ref;
  if (ref === undefined) return undefined;
  const workItem = parseWorkItemRef(ref);
  if (event.commentId === undefined) return { ref, target: { workItem }, label: "item" };
  const commentKind = event.commentKind ?? "comment";
  return { ref, target: { workItem, commentId: event.commentId, commentKind }, label: `${commentKind}:${event.commentId}` };
}

export class Reactions {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly options: ReactionsOptions) {}

  /** Sends the reaction configured for `moment` in the background; returns at once. */
  react(event: InboundEvent, moment: ReactionMoment): void {
    const config = this.options.config;
    const content = config[moment];
    if (!config.enabled || content === "") return;
    let where: ReturnType<typeof reactionTargetOf>;
    let tracker: Tracker;
    try {
      where = reactionTargetOf(event);
      if (where === undefined) return;
      tracker = this.options.trackers.forRef(where.ref);
    } catch {
      // A ref no configured tracker holds cannot be reacted on; routing reports such refs itself.
      return;
    }
    if (tracker.react === undefined) return;
    const { ref, target, label } = where;
    const events = bindEvents(this.options.events, { work_item: ref, delivery_id: event.deliveryId });
    const sent = (async () => {
      try {
        await tracker.react?.(target, content);
        events.emit("reaction.added", { content, target: label });
      } catch (error) {
        events.emit("reaction.failed", { content, target: label, error: messageOf(error) });
      }
    })();
    this.pending.add(sent);
    void sent.finally(() => this.pending.delete(sent));
  }

  /** Resolves once the reactions in flight are done, or after `timeoutMs`, whichever is first. */
  async idle(timeoutMs = 5_000): Promise<void> {
    if (this.pending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([Promise.allSettled([...this.pending]).then(() => undefined), bound]);
    clearTimeout(timer);
  }
}
