import type { EventHandler, InboundEvent } from "../routing/inbound.js";
import type { ItemTitles } from "../trackers/titles.js";

/**
 * The titles the daemon sees pass (trackers/titles.ts): every event its webhook and its poller
 * read carries its item's title, noted before the event goes on to the dispatcher, so that the
 * dashboard's board names GitHub items without asking GitHub.
 */

/**
 * Which item an event's title belongs to: its pull request when it has one (the event may name
 * the issues the pull request is for as its work items), else its one work item; none for an
 * event with no title or several items and no pull request.
 */
export function titleOfEvent(event: Pick<InboundEvent, "title" | "workItems" | "pullRequest">): { readonly ref: string; readonly title: string } | undefined {
  const title = event.title;
  if (title === undefined || title.trim() === "") return undefined;
  if (event.pullRequest !== undefined) return { ref: event.pullRequest.ref, title };
  const only = event.workItems.length === 1 ? event.workItems[0] : undefined;
  return only === undefined ? undefined : { ref: only.ref, title };
}

/** `handler`, noting each event's title first (synchronously: the handler's order is kept). */
export function notingTitles(handler: EventHandler, titles: Pick<ItemTitles, "note">): EventHandler {
  return {
    handle(event) {
      const titled = titleOfEvent(event);
      if (titled !== undefined) titles.note(titled.ref, titled.title);
      return handler.handle(event);
    },
  };
}
