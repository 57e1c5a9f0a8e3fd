import type { ActionName, Comment, EventRecord, GraphAnswer, Item, Me, Why } from "./model.js";

/**
 * The page's calls to the daemon's API (docs/dashboard.md), all to its own origin: the session
 * cookie goes with them by itself (HttpOnly: no script here ever reads it), and a POST carries
 * JSON, as the API requires.
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
    const body = (await response.json()) as { error?: unknown };
    if (typeof body.error === "string") message = body.error;
  } catch {
    // Not JSON (a proxy's page): the status line says what there is to say.
  }
  if (response.status === 401) message = "Not logged in (or the daemon restarted): run `the-loop dashboard` for a new login URL.";
  return new ApiError(response.status, message);
}

async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin", ...(signal ? { signal } : {}) });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

const item = (ref: string): string => `/api/v1/items/${encodeURIComponent(ref)}`;

export const api = {
  me: (): Promise<Me> => getJson("/api/v1/me"),
  items: (): Promise<{ items: Item[]; problems: { file: string; message: string }[] }> => getJson("/api/v1/items"),
  why: (ref: string): Promise<Why> => getJson(`${item(ref)}/why`),
  graph: (ref: string): Promise<GraphAnswer> => getJson(`${item(ref)}/graph`),
  comments: (ref: string): Promise<{ comments: Comment[] }> => getJson(`${item(ref)}/comments`),
  events: (query: URLSearchParams, signal?: AbortSignal): Promise<{ events: EventRecord[]; complete: boolean }> =>
    getJson(`/api/v1/events?${query.toString()}`, signal),
  async act(ref: string, action: ActionName, body: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${item(ref)}/actions/${action}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (response.status === 401) throw await errorOf(response);
    let parsed: Record<string, unknown> = {};
    try {
      parsed = (await response.json()) as Record<string, unknown>;
    } catch {
      // No JSON body: the status alone is the answer.
    }
    return { status: response.status, body: parsed };
  },
};

export function eventStreamUrl(query: URLSearchParams): string {
  return `/api/v1/events/stream?${query.toString()}`;
}

export function terminalStreamUrl(ref: string): string {
  return `${item(ref)}/terminal/stream`;
}
