import type { InboundEvent } from "../routing/inbound.js";
import type { WorkItemEntity } from "../sdk/hooks/catalog.js";
import type { WorkItem } from "../workitem/index.js";
import { githubItemUrl, parseWorkItemRef, workItemOf } from "../workitem/index.js";
import type { SessionRecord } from "../registry/record.js";

/**
 * The facts the session side hands the lifecycle points: the work item as an entity of plain
 * JSON fields, and what kind of a person's input an event is.
 */

/** Input text handed to `input_received`, bounded like the rest of what reaches a hook. */
const INPUT_TEXT_MAX = 20_000;
/** A refusal's reason as it is posted and recorded. */
export const REFUSAL_REASON_MAX = 500;

export function workItemEntity(item: WorkItem): WorkItemEntity {
  return {
    ref: item.ref,
    tracker: item.tracker,
    host: item.host,
    repository: item.repository,
    number: item.number,
    kind: item.kind,
    url: item.url,
    id: item.id,
  };
}

/**
 * The entity of an item known only by its ref (an agent's `the-loop ask`): its session's record
 * when it has one, else what the ref itself says — an issue, with no tracker id.
 */
export function workItemEntityOfRef(ref: string, record?: SessionRecord): WorkItemEntity {
  if (record !== undefined) return workItemEntity(record.workItem as WorkItem);
  const parsed = parseWorkItemRef(ref);
  const url = parsed.tracker === "github" ? githubItemUrl(parsed, "issue") : "";
  return workItemEntity(workItemOf(parsed, { kind: "issue", url, id: "" }));
}

export type InputKind = "comment" | "review" | "review_comment" | "answer" | "command";

/**
 * What kind of a person's input `event` is when it is delivered into `record`'s session (or boots
 * a new one, without a record); undefined for events no person wrote (a label, an edit, a state
 * change): those are not input.
 */
export function deliveredInputKind(event: InboundEvent, record: SessionRecord | undefined): InputKind | undefined {
  // The-loop's own events (the CLI's commands, a retried start) are not a person's input here.
  if (event.source === "cli") return undefined;
  switch (event.kind) {
    case "commented":
      return record?.awaitingInput !== undefined ? "answer" : "comment";
    case "reviewed":
      return "review";
    case "review_commented":
      return "review_comment";
    default:
      return undefined;
  }
}

export function boundedInputText(text: string | null): string {
  if (text === null) return "";
  return text.length > INPUT_TEXT_MAX ? text.slice(0, INPUT_TEXT_MAX) : text;
}

export function boundedReason(reason: string): string {
  return reason.length > REFUSAL_REASON_MAX ? `${reason.slice(0, REFUSAL_REASON_MAX - 1)}…` : reason;
}
