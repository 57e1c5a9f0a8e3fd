import { messageOf } from "../errors.js";
import { controlCommentText } from "../control/comment.js";
import type { ControlRequest } from "../control/types.js";
import type { ControlCommand } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { parseWorkItemRef } from "../workitem/index.js";

/** How the comment on the work item went. */
export type ControlCommentResult = { readonly posted: true; readonly id: string } | { readonly posted: false; readonly error: string };

export interface AnnounceDeps {
  readonly trackers: Pick<TrackerSet, "forRef">;
  readonly events: EventSink;
  /** routing.control.keywords. */
  readonly keywords: Readonly<Record<ControlCommand, string>>;
}

/**
 * Leaves an operator's control command on the work item's thread (`the-loop sessions <command>`,
 * the dashboard's buttons): the keyword an authorized person would have typed, a line saying
 * where it came from and who gave it, and the loop-prevention marker so no ingress acts on it
 * again (docs/control.md#from-the-cli). Best-effort: a failure is reported (`control.announce_failed`)
 * and the command stands.
 */
export async function announceControl(deps: AnnounceDeps, request: ControlRequest): Promise<ControlCommentResult> {
  const keyword = deps.keywords[request.command];
  const via = request.source === "dashboard" ? "dashboard" : "cli";
  try {
    const body = controlCommentText({ keyword, command: request.command, actor: request.actor, graph: request.graph, via });
    const comment = await deps.trackers.forRef(request.ref).postComment(parseWorkItemRef(request.ref), body);
    deps.events.emit("control.announced", { work_item: request.ref, command: request.command, comment_id: comment.id });
    return { posted: true, id: comment.id };
  } catch (error) {
    const message = messageOf(error);
    deps.events.emit("control.announce_failed", { work_item: request.ref, command: request.command, error: message });
    return { posted: false, error: message };
  }
}
