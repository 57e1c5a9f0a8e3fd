import type { EventSink } from "../../events/index.js";
import { formatWorkItemRef, isSelfAuthored } from "../../workitem/index.js";
import { wholeUtf8Suffix } from "../../subprocess/text.js";
import { LocalTrackerInputError } from "./errors.js";
import type { ItemSnapshot, JournalLine } from "./records.js";

/**
 * Each committed change of the local tracker as its `item.*` event, and the journal line of a
 * recorded check with its checks on the input: pure but for the emit.
 */

/** The most of a check's log a journal line keeps: its end, where a failure says what failed. */
export const CHECK_LOG_MAX_BYTES = 65_536;

/** What `the-loop item check` records. */
export interface CheckInput {
  readonly name: string;
  readonly conclusion: "failure" | "success";
  readonly url?: string;
  readonly commit?: string;
  readonly log?: string;
}

// C0 and C1 control characters and DEL: a check's name and URL are one line each.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/** The journal line of a check on `snapshot`, its input checked: a name of one line, an http(s) URL, a hex commit, the log's tail. */
export function checkedLine(seq: number, ts: string, snapshot: ItemSnapshot, actor: string, check: CheckInput): JournalLine {
  const name = check.name.trim();
  if (name === "" || name.length > 200 || CONTROL_CHARACTER.test(name)) {
    throw new LocalTrackerInputError("the check's name must be one line of 1 to 200 characters without control characters");
  }
  if (check.url !== undefined && (!/^https?:\/\/[^\s]+$/.test(check.url) || CONTROL_CHARACTER.test(check.url))) {
    throw new LocalTrackerInputError(`the check's URL "${check.url}" is not an http or https URL`);
  }
  if (check.commit !== undefined && !/^[0-9a-f]{7,64}$/i.test(check.commit)) {
    throw new LocalTrackerInputError(`the commit "${check.commit}" is not a commit's hex id (7 to 64 hex digits)`);
  }
  const log = check.log === undefined ? undefined : logTail(check.log);
  return {
    seq,
    ts,
    kind: "checked",
    number: snapshot.number,
    itemId: snapshot.id,
    actor,
    labels: snapshot.labels,
    state: snapshot.state,
    check: {
      name,
      conclusion: check.conclusion,
      ...(check.url !== undefined ? { url: check.url } : {}),
      ...(check.commit !== undefined ? { commit: check.commit.toLowerCase() } : {}),
      ...(log !== undefined ? { log } : {}),
    },
  };
}

function logTail(log: string): string {
  const bytes = Buffer.from(log, "utf8");
  return bytes.length <= CHECK_LOG_MAX_BYTES ? log : wholeUtf8Suffix(bytes.subarray(bytes.length - CHECK_LOG_MAX_BYTES)).toString("utf8");
}

/** Records `line`, committed in `project`, as its `item.*` event. */
export function recordChange(events: EventSink, project: string, line: JournalLine): void {
  const work_item = formatWorkItemRef({ tracker: "local", project, number: line.number });
  const actor = line.actor;
  switch (line.kind) {
    case "opened":
      events.emit("item.opened", { work_item, actor, title: line.title, labels: line.labels });
      return;
    case "commented":
      events.emit("item.commented", {
        work_item,
        actor,
        comment_id: line.comment.id,
        marked: isSelfAuthored(line.comment.body),
      });
      return;
    case "labeled":
      events.emit("item.labeled", { work_item, actor, label: line.label });
      return;
    case "unlabeled":
      events.emit("item.unlabeled", { work_item, actor, label: line.label });
      return;
    case "closed":
      events.emit("item.closed", { work_item, actor });
      return;
    case "reopened":
      events.emit("item.reopened", { work_item, actor });
      return;
    case "checked":
      events.emit("item.checked", { work_item, actor, check: line.check.name, conclusion: line.check.conclusion });
      return;
  }
}
