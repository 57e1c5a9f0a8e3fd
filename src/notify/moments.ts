import type { NotifyMoment } from "../config/notify-schema.js";
import type { EventType } from "../events/catalog.js";
import { clip, stripControlCharacters } from "../subprocess/text.js";

/**
 * Which events are moments a person can act on, and what each one tells them: one pure table,
 * event type → moment and words. docs/notifications.md lists the same table for people.
 *
 * Text an event carries from a ticket or the agent (a question, a reason) is hostile: it is
 * cleaned of control characters, put on one line and bounded here, and escaped for its sink
 * where the body is made (message.ts). The comment that moves an item on is always a keyword of
 * the running config, never a word written here.
 */

/** The comment keywords a notification may name, as the running config spells them. */
export interface NotifyKeywords {
  /** graph.keywords.approve */
  readonly approve: string;
  /** graph.keywords.requestChanges */
  readonly requestChanges: string;
  /** routing.control.keywords.start */
  readonly start: string;
  /** routing.control.keywords.resume */
  readonly resume: string;
}

/** What moves the item on. */
export interface NotifyAction {
  /** The exact comment to write on the item; absent when any comment (an answer) or nothing is it. */
  readonly comment?: string;
  /** Another comment that moves it on differently (request changes instead of approving). */
  readonly alternative?: string;
  /** One sentence saying what to do, naming the comment. */
  readonly say: string;
}

/** A moment, in words, before it is shaped for a sink. */
export interface Notice {
  readonly moment: NotifyMoment;
  readonly workItem: string;
  /** The event it comes from. */
  readonly eventType: string;
  /** When the event was recorded (ISO 8601). */
  readonly at: string;
  /** One line: what happened to which item. */
  readonly headline: string;
  /** Text the event carries from the ticket or the agent (the question, the reason): cleaned and bounded. */
  readonly detail?: string;
  readonly action: NotifyAction;
}

/** The fields of one event, as the event log holds them. */
export interface MomentEvent {
  readonly event: string;
  readonly ts?: string;
  readonly [field: string]: unknown;
}

/** The longest detail carried: a question or a reason, not a transcript. */
export const MAX_DETAIL_CHARS = 500;
/** The longest value of a short field (a node, a code) quoted in a headline. */
const MAX_NAME_CHARS = 80;

type Fields = Readonly<Record<string, unknown>>;

interface MomentSpec {
  readonly moment: NotifyMoment;
  /** The words of the notice, or undefined when this event is not the moment after all. */
  readonly words: (fields: Fields, keywords: NotifyKeywords) => Pick<Notice, "headline" | "detail" | "action"> | undefined;
}

/** One line of plain text: no control characters, whitespace runs as one space, at most `max` characters. */
export function oneLine(value: unknown, max: number = MAX_DETAIL_CHARS): string {
  if (typeof value !== "string") return "";
  return clip(stripControlCharacters(value).replace(/\s+/g, " ").trim(), max);
}

const name = (fields: Fields, key: string): string => oneLine(fields[key], MAX_NAME_CHARS) || "?";
const count = (value: unknown): string => (typeof value === "number" && Number.isFinite(value) ? value.toLocaleString("en-US") : "?");
const detailOf = (value: unknown): { detail?: string } => {
  const text = oneLine(value);
  return text === "" ? {} : { detail: text };
};

/** A run that ended short of its terminal node: starting the item again begins a new run. */
function runEnded(how: string): MomentSpec {
  return {
    moment: "blocked",
    words: (fields, keywords) => ({
      headline: `${name(fields, "work_item")}'s run ${how} at node "${name(fields, "node")}" (${name(fields, "reason_code")})`,
      ...detailOf(fields.reason),
      action: { comment: keywords.start, say: `Comment \`${keywords.start}\` on the item to start it again: a new run begins at the graph's start node.` },
    }),
  };
}

function failedToStart(what: string, reasonField = "error"): MomentSpec {
  return {
    moment: "failed-to-start",
    words: (fields, keywords) => ({
      headline: `${what} for ${name(fields, "work_item")}`,
      ...detailOf(fields[reasonField]),
      action: {
        comment: keywords.start,
        say: `Fix what the error says, then comment \`${keywords.start}\` on the item (or run \`the-loop sessions start --work-item ${name(fields, "work_item")}\`).`,
      },
    }),
  };
}

/**
 * Event type → moment. Keyed by the catalog's types, so an event renamed or removed fails
 * type-checking here (docs/notifications.md lists the same table).
 */
export const MOMENT_TABLE = {
  "graph.waiting": {
    moment: "gate-waiting",
    words: (fields, keywords) => ({
      headline: `${name(fields, "work_item")} waits for a person at the gate "${name(fields, "node")}" (graph ${name(fields, "graph")})`,
      ...detailOf(fields.reason),
      action: {
        comment: keywords.approve,
        alternative: keywords.requestChanges,
        say: `Comment \`${keywords.approve}\` on the item to approve it, or \`${keywords.requestChanges}\` to send it back.`,
      },
    }),
  },
  "session.awaiting_input": {
    moment: "question",
    words: (fields) => ({
      headline: `The agent on ${name(fields, "work_item")} asked a question`,
      ...detailOf(fields.question),
      action: { say: "Answer with a comment on the item: the next comment by an authorized person is the answer." },
    }),
  },
  "graph.blocked": {
    moment: "blocked",
    words: (fields, keywords) => ({
      headline: `${name(fields, "work_item")} is blocked at node "${name(fields, "node")}" (${name(fields, "reason_code")})`,
      ...detailOf(fields.reason),
      action: {
        comment: keywords.approve,
        alternative: keywords.requestChanges,
        say: `Comment \`${keywords.approve}\` on the item to accept the node's work as it is, or \`${keywords.requestChanges}\` to give the agent the node again (or move it with \`the-loop graph force\`).`,
      },
    }),
  },
  "graph.stalled": runEnded("stalled"),
  "graph.exhausted": runEnded("ran out of generations"),
  "graph.failed": runEnded("failed"),
  "session.spawn_failed": failedToStart("A session could not be started"),
  "workspace.failed": failedToStart("The checkout could not be prepared, so no session started"),
  "session.failed_to_start": failedToStart("The agent kept dying past routing.supervision.maxRestarts: the session failed to start", "reason"),
  "session.budget_exceeded": {
    moment: "budget",
    words: (fields) => ({
      headline: `${name(fields, "work_item")} is paused: its session reached its ${name(fields, "dimension")} budget`,
      ...detailOf(`used ${count(fields.used)} of a limit of ${count(fields.limit)} ${oneLine(fields.dimension, MAX_NAME_CHARS)}`),
      action: {
        say: `Raise the limit and resume it: \`the-loop sessions resume --work-item ${name(fields, "work_item")} --budget +N\` (a resume comment alone resumes it only until the next look pauses it again).`,
      },
    }),
  },
  "ci.gave_up": {
    moment: "ci-gave-up",
    words: (fields) => ({
      headline: `CI on ${name(fields, "pull_request")} (for ${name(fields, "work_item")}) failed again after ${count(fields.attempts)} fixes: its session is told no more`,
      ...detailOf(`check: ${oneLine(fields.check, MAX_NAME_CHARS)}`),
      action: { say: "Look at the failing check on the pull request: a comment on it by an authorized person reaches the session with what to do." },
    }),
  },
  "graph.completed": {
    moment: "done",
    words: (fields) => ({
      headline: `${name(fields, "work_item")} is done: its run reached "${name(fields, "node")}" (graph ${name(fields, "graph")})`,
      action: { say: "Nothing is needed: the run is done." },
    }),
  },
} as const satisfies Partial<Record<EventType, MomentSpec>>;

const TABLE: Readonly<Record<string, MomentSpec>> = MOMENT_TABLE;

/** The moment of `type`, or undefined when it is none. */
export function momentOfType(type: string): NotifyMoment | undefined {
  return Object.hasOwn(TABLE, type) ? TABLE[type]?.moment : undefined;
}

/** The event types that are `moment`, in table order. */
export function eventTypesOf(moment: NotifyMoment): string[] {
  return Object.entries(TABLE)
    .filter(([, spec]) => spec.moment === moment)
    .map(([type]) => type);
}

/** The notice an event makes, or undefined when it is no moment (or names no work item). */
export function noticeOf(event: MomentEvent, keywords: NotifyKeywords): Notice | undefined {
  if (!Object.hasOwn(TABLE, event.event)) return undefined;
  const spec = TABLE[event.event];
  const workItem = event.work_item;
  if (spec === undefined || typeof workItem !== "string" || workItem === "") return undefined;
  const words = spec.words(event, keywords);
  if (words === undefined) return undefined;
  return { moment: spec.moment, workItem: oneLine(workItem, 200), eventType: event.event, at: typeof event.ts === "string" ? event.ts : "", ...words };
}
