import type { PageAnswerName, PageAnswers } from "../answer-schemas.js";
import { parseAnswer } from "./answers.js";
import type { ActionName } from "./model.js";

/**
 * The page's calls to the daemon's API (docs/dashboard.md), all to its own origin: the session
 * cookie goes with them by itself (HttpOnly: no script here ever reads it), and a POST carries
 * JSON, as the API requires. Every answer is parsed against its route's schema (answers.ts).
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body: unknown = await response.json();
    if (isRecord(body) && typeof body.error === "string") message = body.error;
  } catch {
    // Not JSON (a proxy's page): the status line says what there is to say.
  }
  if (response.status === 401) message = "Not logged in (or the daemon restarted): run `the-loop dashboard` for a new login URL.";
  return new ApiError(response.status, message);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

async function bodyOf(response: Response): Promise<unknown> {
  try {
    const body: unknown = await response.json();
    return body;
  } catch {
    throw new ApiError(
      response.status,
      `The daemon's answer to ${new URL(response.url, location.href).pathname} is not JSON. Reload the page; if it stays, restart the daemon.`,
    );
  }
}

async function getAnswer<K extends PageAnswerName>(name: K, path: string, signal?: AbortSignal): Promise<PageAnswers[K]> {
  const response = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin", ...(signal ? { signal } : {}) });
  if (!response.ok) throw await errorOf(response);
  return parseAnswer(name, await bodyOf(response));
}

const item = (ref: string): string => `/api/v1/items/${encodeURIComponent(ref)}`;

export const api = {
  me: (): Promise<PageAnswers["me"]> => getAnswer("me", "/api/v1/me"),
  items: (): Promise<PageAnswers["items"]> => getAnswer("items", "/api/v1/items"),
  why: (ref: string): Promise<PageAnswers["why"]> => getAnswer("why", `${item(ref)}/why`),
  graph: (ref: string): Promise<PageAnswers["graph"]> => getAnswer("graph", `${item(ref)}/graph`),
  comments: (ref: string): Promise<PageAnswers["comments"]> => getAnswer("comments", `${item(ref)}/comments`),
  events: (query: URLSearchParams, signal?: AbortSignal): Promise<PageAnswers["events"]> => getAnswer("events", `/api/v1/events?${query.toString()}`, signal),
  async act(ref: string, action: ActionName, body: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${item(ref)}/actions/${action}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (response.status === 401) throw await errorOf(response);
    let parsed: unknown = {};
    try {
      parsed = await response.json();
    } catch {
      // No JSON body: the status alone is the answer.
    }
    // The outcome line reads each field it shows with its type checked; an answer that is no object at all is an error.
    if (!isRecord(parsed))
      throw new ApiError(response.status, `The daemon's answer to ${action} is not the shape this page reads (expected an object). Reload the page.`);
    return { status: response.status, body: parsed };
  },
};

export function eventStreamUrl(query: URLSearchParams): string {
  return `/api/v1/events/stream?${query.toString()}`;
}

export function terminalStreamUrl(ref: string): string {
  return `${item(ref)}/terminal/stream`;
}
