import type { z } from "zod";
import type { RESPONSE_SCHEMAS } from "../schemas.js";

/**
 * The page's decisions as plain functions over the API's answers (table-tested in
 * test/dashboard/page-model.test.ts): which column a card goes in, which actions apply now, what a
 * budget bar shows, how old a card is, where the graph's nodes are drawn. No DOM here.
 */

type Answer<K extends keyof typeof RESPONSE_SCHEMAS> = z.output<(typeof RESPONSE_SCHEMAS)[K]>;

export type Me = Answer<"GET /api/v1/me">;
export type Item = Answer<"GET /api/v1/items">["items"][number];
export type Why = Answer<"GET /api/v1/items/{ref}/why">;
export type GraphAnswer = Answer<"GET /api/v1/items/{ref}/graph">;
export type EventRecord = Answer<"GET /api/v1/events">["events"][number];
/** One of the item's comments, oldest first; `body` is text, never HTML. */
export type Comment = Answer<"GET /api/v1/items/{ref}/comments">["comments"][number];
/** One `event: screen` message of the terminal stream: the visible pane, with its colours. */
export type Screen = Answer<"GET /api/v1/items/{ref}/terminal/stream (each `event: screen` message's data; `event: ended` when the session is gone)">;

export const COLUMNS = [
  { id: "queued", title: "Queued", hint: "waiting for a slot under routing.limits" },
  { id: "working", title: "Working", hint: "an agent is on it" },
  { id: "waiting", title: "Waiting for a person", hint: "a gate, a question or a pause" },
  { id: "blocked", title: "Blocked", hint: "stopped at a node, or failed to start" },
  { id: "done", title: "Done", hint: "its run ended or its session closed" },
] as const;

export type ColumnId = (typeof COLUMNS)[number]["id"];

/** The board's rows by column, each in the API's order (newest activity first); `filter` matches ref, title, node, agent. */
export function byColumn(items: readonly Item[], filter = ""): Record<ColumnId, Item[]> {
  const columns: Record<ColumnId, Item[]> = { queued: [], working: [], waiting: [], blocked: [], done: [] };
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  for (const item of items) {
    if (words.length > 0) {
      const text = [item.ref, item.title ?? "", item.graph?.node ?? "", item.graph?.phase ?? "", agentOf(item) ?? ""].join(" ").toLowerCase();
      if (!words.every((word) => text.includes(word))) continue;
    }
    columns[item.column].push(item);
  }
  return columns;
}

/** The agent CLI the item runs (or is queued for). */
export function agentOf(item: Item): string | null {
  return item.session?.harness ?? item.queue?.harness ?? null;
}

/** Whether the item's session is one a person can act on (it has a pane). */
export function liveSession(item: Item | undefined): boolean {
  const status = item?.session?.status;
  return status === "active" || status === "paused";
}

/** When the card's story began: its session's start, else its place in the queue, else its last command or graph move. */
export function startedAt(item: Item): string | null {
  return item.session?.createdAt ?? item.queue?.queuedAt ?? item.control?.requestedAt ?? item.graph?.updatedAt ?? item.lastActivity;
}

/** A duration as a person reads it on a card: `45s`, `12m`, `3h 5m`, `4d 2h`. */
export function formatAge(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "0s";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 === 0 ? `${h}h` : `${h}h ${m % 60}m`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d}d` : `${d}d ${h % 24}h`;
}

/** An age from an ISO time, or null when the time is missing or not a time. */
export function ageOf(iso: string | null | undefined, now: number): string | null {
  if (iso == null) return null;
  const at = Date.parse(iso);
  return Number.isNaN(at) ? null : formatAge(now - at);
}

export interface BudgetBar {
  /** The larger share used of the limits in force, 0–1 (capped at 1); null when no limit is set. */
  readonly share: number | null;
  readonly level: "ok" | "warn" | "over";
  /** What the bar stands for, in words. */
  readonly label: string;
}

function compact(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(n >= 10_000_000 ? 0 : 1)}M`;
  if (n >= 1_000) return `${(n / 1_000).toFixed(n >= 10_000 ? 0 : 1)}k`;
  return String(Math.round(n));
}

/** The card's budget bar: tokens and minutes against their limits; the bar is the larger share. */
export function budgetBar(budget: Item["budget"]): BudgetBar | null {
  if (budget === null) return null;
  const parts: string[] = [];
  const shares: number[] = [];
  const { tokens, minutes } = budget;
  if (tokens.used !== null) parts.push(tokens.limit !== null ? `${compact(tokens.used)} / ${compact(tokens.limit)} tokens` : `${compact(tokens.used)} tokens`);
  else parts.push("tokens unreadable");
  if (tokens.used !== null && tokens.limit !== null && tokens.limit > 0) shares.push(tokens.used / tokens.limit);
  if (minutes.used !== null) parts.push(minutes.limit !== null ? `${Math.round(minutes.used)} / ${minutes.limit} min` : `${Math.round(minutes.used)} min`);
  if (minutes.used !== null && minutes.limit !== null && minutes.limit > 0) shares.push(minutes.used / minutes.limit);
  const share = shares.length > 0 ? Math.max(...shares) : null;
  const level = budget.exceeded !== null || (share !== null && share >= 1) ? "over" : share !== null && share >= budget.warnAt ? "warn" : "ok";
  const label = budget.exceeded !== null ? `over its ${budget.exceeded.dimension} limit · ${parts.join(" · ")}` : parts.join(" · ");
  return { share: share === null ? null : Math.min(1, share), level, label };
}

export type ActionName = "start" | "stop" | "pause" | "resume" | "approve" | "request-changes" | "answer" | "close";

/**
 * The actions that apply to the item now, in the order the page shows them: approve and request
 * changes only while its graph run waits at a gate; answer only while its agent waits on a
 * question; pause on a running session, resume on a paused one (or a standing pause); start
 * when nothing runs it; stop and close while a session lives (stop also takes a queued start
 * off the queue). None when the dashboard is read-only, and only those /api/v1/me allows.
 */
export function applicableActions(item: Item | undefined, me: Me | undefined): ActionName[] {
  if (item === undefined || me === undefined || me.readOnly) return [];
  const live = liveSession(item);
  const paused = item.session?.status === "paused" || (item.control !== null && !item.control.cleared && item.control.command === "pause");
  const actions: ActionName[] = [];
  if (item.graph?.status === "waiting") actions.push("approve", "request-changes");
  if (live && item.session?.question != null) actions.push("answer");
  if (live && item.session?.status === "active" && !paused) actions.push("pause");
  if (paused) actions.push("resume");
  if (!live && item.queue === null) actions.push("start");
  if (live || item.queue !== null) actions.push("stop");
  if (live) actions.push("close");
  return actions.filter((action) => me.actions.includes(action));
}

/** What each action's button says, and whether it takes text (a reason, an answer) first. */
export const ACTION_LABELS: Readonly<Record<ActionName, { readonly label: string; readonly text: "none" | "optional" | "required" }>> = {
  approve: { label: "Approve", text: "optional" },
  "request-changes": { label: "Request changes", text: "required" },
  answer: { label: "Answer", text: "required" },
  start: { label: "Start", text: "none" },
  pause: { label: "Pause", text: "none" },
  resume: { label: "Resume", text: "none" },
  stop: { label: "Stop", text: "none" },
  close: { label: "Close session", text: "none" },
};

/** The body an action is posted with. */
export function actionBody(action: ActionName, text: string): Record<string, string> {
  const trimmed = text.trim();
  if (action === "answer") return { text: trimmed };
  if (action === "approve" || action === "request-changes") return trimmed === "" ? {} : { reason: trimmed };
  return {};
}

/** A link to the item on its tracker, when it is a web address (a `javascript:` URL in a record is never a link). */
export function safeHref(url: string | null | undefined): string | null {
  if (url == null) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    // Not a URL at all: shown as text, not linked.
    return null;
  }
}

/** The page's routes, in the URL's fragment: the board, one item, the events with their filters. */
export type Route =
  | { readonly view: "board"; readonly filter: string }
  | { readonly view: "item"; readonly ref: string }
  | { readonly view: "events"; readonly query: URLSearchParams };

export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#/, "");
  const [path = "", search = ""] = text.split("?", 2);
  const item = /^\/item\/(.+)$/.exec(path);
  if (item !== null) {
    try {
      return { view: "item", ref: decodeURIComponent(item[1] ?? "") };
    } catch {
      // A mangled fragment: the board, rather than a page for no item.
      return { view: "board", filter: "" };
    }
  }
  if (path === "/events") return { view: "events", query: new URLSearchParams(search) };
  return { view: "board", filter: new URLSearchParams(search).get("q") ?? "" };
}

export function itemHref(ref: string): string {
  return `#/item/${encodeURIComponent(ref)}`;
}

export function eventsHref(query: URLSearchParams): string {
  const text = query.toString();
  return text === "" ? "#/events" : `#/events?${text}`;
}

const SHOWN_APART = new Set(["ts", "event", "level", "source", "work_item"]);

/** An event's other fields, as `key=value` text (objects as JSON), at most `max` characters. */
export function eventDetails(record: Readonly<Record<string, unknown>>, max = 400): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (SHOWN_APART.has(key) || value === undefined) continue;
    parts.push(`${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  const text = parts.join("  ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The loop's marker on everything it posts: a comment the page shows is marked by its badge instead. */
const LOOP_MARKER = /\s*<!--\s*the-loop:agent-comment\s*-->\s*/g;

/** A comment as the page shows it: the marker dropped, and for one of the-loop's, its first line apart (the rest folds away). */
export function shownComment(comment: Pick<Comment, "body" | "fromTheLoop">): { readonly head: string; readonly rest: string } {
  const body = comment.body.replace(LOOP_MARKER, "\n").trim();
  if (!comment.fromTheLoop) return { head: body, rest: "" };
  const lines = body.split("\n");
  const first = lines.findIndex((line) => line.trim() !== "");
  if (first === -1) return { head: "", rest: "" };
  return {
    head: (lines[first] ?? "").trim(),
    rest: lines
      .slice(first + 1)
      .join("\n")
      .trim(),
  };
}
