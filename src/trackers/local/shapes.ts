import { workItemOf } from "../../workitem/index.js";
import type { WorkItem } from "../../workitem/index.js";
import type { ItemThread, TrackerChange, TrackerComment, WorkItemState } from "../tracker.js";
import type { ItemSnapshot, JournalLine } from "./records.js";

/**
 * What the local tracker's records look like through the tracker seam: a snapshot as a
 * WorkItemState or LocalItem, a journal line as a TrackerChange. Pure; a project is named with
 * the URL of its items folder, the base of every item's URL.
 */

/** A local work item with its conversation. */
export interface LocalItem extends WorkItemState {
  readonly comments: readonly TrackerComment[];
}

/** The project an item belongs to, as its shapes need it. */
export interface ProjectView {
  readonly project: string;
  /** `file://` URL of the project's items folder. */
  readonly itemsUrl: string;
}

export function localWorkItem(view: ProjectView, snapshot: { number: number; id: string }): WorkItem {
  return workItemOf(
    { tracker: "local", project: view.project, number: snapshot.number },
    { kind: "issue", url: `${view.itemsUrl}/${snapshot.number}.json`, id: snapshot.id },
  );
}

export function commentOf(item: WorkItem, comment: { id: string; seq: number; author: string; body: string; createdAt: string }): TrackerComment {
  return {
    id: comment.id,
    author: comment.author,
    body: comment.body,
    createdAt: comment.createdAt,
    url: `${item.url}#c${comment.seq}`,
    kind: "comment",
  };
}

export function stateOf(view: ProjectView, snapshot: ItemSnapshot): WorkItemState {
  return {
    item: localWorkItem(view, snapshot),
    title: snapshot.title,
    body: snapshot.body,
    author: snapshot.author,
    state: snapshot.state,
    labels: [...snapshot.labels],
    createdAt: snapshot.createdAt,
    updatedAt: snapshot.updatedAt,
    closedAt: snapshot.closedAt,
  };
}

export function localItemOf(view: ProjectView, snapshot: ItemSnapshot): LocalItem {
  const state = stateOf(view, snapshot);
  return { ...state, comments: snapshot.comments.map((comment) => commentOf(state.item, comment)) };
}

export function changeOf(view: ProjectView, line: JournalLine): TrackerChange {
  const item = localWorkItem(view, { number: line.number, id: line.itemId });
  const base = {
    id: `${view.project}:${line.seq}`,
    kind: line.kind,
    item,
    actor: line.actor,
    at: line.ts,
    labels: [...line.labels],
    state: line.state,
  };
  switch (line.kind) {
    case "opened":
      return { ...base, title: line.title, body: line.body };
    case "commented":
      return {
        ...base,
        comment: commentOf(item, {
          id: line.comment.id,
          seq: line.seq,
          author: line.actor,
          body: line.comment.body,
          createdAt: line.ts,
        }),
      };
    case "labeled":
    case "unlabeled":
      return { ...base, label: line.label };
    case "checked":
      return { ...base, check: { ...line.check } };
    case "closed":
    case "reopened":
      return base;
  }
}

/** An item's title and its last `limit` comments (Tracker.recentComments). */
export function threadOf(item: LocalItem, limit: number): ItemThread {
  return { title: item.title, comments: item.comments.slice(-limit) };
}
