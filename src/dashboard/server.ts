import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { messageOf } from "../errors.js";
import type { DashboardConfig } from "../config/dashboard-schema.js";
import type { EventSink } from "../events/log.js";
import { followEvents } from "../events/follow.js";
import type { EventRecord } from "../events/reader.js";
import { openGraphStates } from "../graph-run/store.js";
import type { Graph } from "../graph/types.js";
import type { StatePaths } from "../state/layout.js";
import type { BudgetLimits } from "../budget/decide.js";
import type { WhySituation } from "../why/explain.js";
import { isDashboardAction, runAction } from "./actions.js";
import type { ActionPorts } from "./actions.js";
import { COOKIE_NAME, LoginBook, admitRequest, bindDecision, identityOf, parseCookies, sessionCookie } from "./auth.js";
import type { DashboardIdentity } from "./auth.js";
import { PAGE_CSP, PageAssets, PageNotBuiltError } from "./page-assets.js";
import { canonicalItem, eventQueryOf, graphDocument, listItems, listSessions, readEventPage, runsOnOf } from "./read.js";
import type { RunsOn } from "./read.js";
import type { FleetView } from "../fleet/index.js";
import { COMMENTS_MAX, commentsDocument } from "./comments.js";
import { whyDocument } from "./why.js";
import { TerminalFeeds } from "./terminal.js";
import type { TerminalPorts } from "./terminal.js";
import { NotFoundError } from "../errors.js";
import type { TrackerComment } from "../trackers/index.js";

import type { Stores } from "../stores/stores.js";
/**
 * The dashboard's HTTP server, in the daemon (node's http, no framework: a dozen routes, each a
 * read of the state root or one action, do not pay for one). Every request passes admitRequest
 * (Host, Origin) first; then `/login?token=` alone may go without the session cookie, and every
 * other route answers 401 without it. Its API is `/api/v1/…` (docs/dashboard.md).
 */

export interface DashboardDeps {
  readonly config: DashboardConfig;
  /** Where dashboard.tls's relative paths are read from: the config file's folder. */
  readonly configDir: string;
  readonly paths: StatePaths;
  /** The state's stores (files under `paths.root` when omitted). */
  readonly stores?: Stores;
  readonly events: EventSink;
  /** The graphs the config runs, by name. */
  readonly graphs: ReadonlyMap<string, Graph>;
  /** What `the-loop why` reads of one item. */
  readonly whyOf: (ref: string) => Promise<WhySituation>;
  readonly actions: ActionPorts;
  /** routing.budget: the limits the board's budget bars are drawn against. */
  readonly budgetLimits?: BudgetLimits;
  /** An item's title as the-loop last read it, without a network call; null when unknown. */
  readonly titleOf?: (ref: string) => string | null;
  /** Reads the titles `titleOf` answers again, before a board is listed (the local tracker's, when it is in the database). */
  readonly refreshTitles?: () => Promise<void>;
  /** The item's last `limit` comments from its tracker; throws a NotFoundError when there is no such item. */
  readonly commentsOf?: (ref: string, limit: number) => Promise<readonly TrackerComment[]>;
  /** The item's terminal, read only: the pane of its live session (undefined without one), and how to read it. */
  readonly terminal?: TerminalPorts & { readonly target: (ref: string) => Promise<string | undefined> };
  /** With state.store: postgres, every daemon on the database and where each item runs, read when asked. */
  readonly fleet?: () => Promise<Pick<FleetView, "placementOf">>;
  /** This dashboard's host, as the daemons' rows name hosts (default: os.hostname()). */
  readonly host?: string;
  readonly now?: () => number;
}

export interface DashboardListening {
  /** The dashboard's own address, e.g. http://127.0.0.1:43123. */
  readonly url: string;
  readonly tls: boolean;
  readonly port: number;
}

/** A request body the API reads: JSON, at most this long. */
const BODY_MAX = 16 * 1024;
/** A comment line on an event stream this often, so proxies and browsers keep it open. */
const HEARTBEAT_MS = 15_000;

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  // The login URL carries its token: no page it leads to sends it on.
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  // The page's own script and stylesheet alone, no inline script or style, requests to itself alone (page-assets.ts).
  "content-security-policy": PAGE_CSP,
  "cross-origin-resource-policy": "same-origin",
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class DashboardServer {
  private server: Server | undefined;
  private identity: DashboardIdentity | undefined;
  private listening: DashboardListening | undefined;
  private readonly book: LoginBook;
  private readonly streams = new Set<AbortController>();
  private readonly now: () => number;
  private readonly page = new PageAssets();
  private readonly terminals: TerminalFeeds | undefined;

  constructor(private readonly deps: DashboardDeps) {
    this.book = new LoginBook(Math.round(deps.config.sessionHours * 3_600_000));
    this.now = deps.now ?? Date.now;
    this.terminals = deps.terminal !== undefined ? new TerminalFeeds(deps.terminal) : undefined;
  }

  /** Listens; throws (with the fix) when the config may not listen where it asks. */
  async start(): Promise<DashboardListening & { readonly warning?: string }> {
    const { config } = this.deps;
    const bind = bindDecision(config);
    if (!bind.ok) throw new Error(bind.reason);
    const handler = (request: IncomingMessage, response: ServerResponse): void => {
      this.handle(request, response).catch((error: unknown) => this.fail(response, error));
    };
    const server = bind.tls && config.tls !== undefined ? createHttpsServer(this.tlsOptions(config.tls), handler) : createHttpServer(handler);
    server.headersTimeout = 10_000;
    server.requestTimeout = 30_000;
    await new Promise<void>((done, failed) => {
      server.once("error", failed);
      server.listen(config.port, config.host, () => {
        server.off("error", failed);
        done();
      });
    });
    this.server = server;
    const port = (server.address() as AddressInfo).port;
    this.identity = identityOf(config, port, bind.tls);
    const shownHost = config.host.includes(":") ? `[${config.host}]` : config.host;
    this.listening = { url: `${bind.tls ? "https" : "http"}://${shownHost}:${port}`, tls: bind.tls, port };
    this.deps.events.emit("dashboard.started", {
      url: this.listening.url,
      tls: bind.tls,
      ...(config.operator !== undefined ? { operator: config.operator } : {}),
    });
    return { ...this.listening, ...(bind.warning !== undefined ? { warning: bind.warning } : {}) };
  }

  private tlsOptions(tls: NonNullable<DashboardConfig["tls"]>): { cert: Buffer; key: Buffer } {
    const read = (path: string, what: string): Buffer => {
      try {
        return readFileSync(resolve(this.deps.configDir, path));
      } catch (error) {
        throw new Error(`dashboard.tls.${what}: cannot read ${path}: ${messageOf(error)}`, { cause: error });
      }
    };
    return { cert: read(tls.certFile, "certFile"), key: read(tls.keyFile, "keyFile") };
  }

  /** A fresh one-time login URL (`the-loop dashboard`); the token is in the URL alone, never logged. */
  issueLogin(): { readonly url: string; readonly expiresAt: string; readonly operator: string | null } {
    if (this.listening === undefined) throw new Error("the dashboard is not listening");
    const issued = this.book.issue(this.now());
    const expiresAt = new Date(issued.expiresAt).toISOString();
    this.deps.events.emit("dashboard.login_issued", { expires_at: expiresAt });
    return { url: `${this.listening.url}/login?token=${issued.token}`, expiresAt, operator: this.deps.config.operator ?? null };
  }

  get address(): DashboardListening | undefined {
    return this.listening;
  }

  async stop(): Promise<void> {
    for (const stream of this.streams) stream.abort();
    this.terminals?.stopAll();
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const identity = this.identity;
    if (identity === undefined) throw new HttpError(503, "the dashboard is starting");
    const url = new URL(request.url ?? "/", "http://dashboard.invalid");
    const method = (request.method ?? "GET").toUpperCase();
    const admitted = admitRequest(
      { method, host: request.headers.host, origin: header(request, "origin"), fetchSite: header(request, "sec-fetch-site") },
      identity,
    );
    if (!admitted.ok) {
      this.deps.events.emit("dashboard.refused", {
        reason_code: admitted.reasonCode,
        reason: admitted.reason,
        status: admitted.status,
        method,
        path: url.pathname.slice(0, 200),
      });
      return sendJson(response, admitted.status, { error: admitted.reason });
    }
    if (url.pathname === "/login") return this.login(url, method, response);
    const cookie = parseCookies(request.headers.cookie).get(COOKIE_NAME);
    if (!this.book.valid(cookie, this.now())) {
      return sendJson(response, 401, { error: "not logged in: run `the-loop dashboard` for a one-time login URL, and open it in this browser" });
    }
    await this.route(request, response, url, method);
  }

  private login(url: URL, method: string, response: ServerResponse): void {
    if (method !== "GET") throw new HttpError(405, "open the login URL in the browser (GET)");
    const token = url.searchParams.get("token") ?? "";
    const opened = token === "" ? undefined : this.book.redeem(token, this.now());
    if (opened === undefined) {
      this.deps.events.emit("dashboard.refused", {
        reason_code: "login",
        reason: "a login URL that is unknown, spent or expired",
        status: 401,
        method,
        path: "/login",
      });
      return sendJson(response, 401, { error: "this login URL is spent or expired: run `the-loop dashboard` for a new one" });
    }
    const expiresAt = new Date(opened.expiresAt).toISOString();
    this.deps.events.emit("dashboard.logged_in", { expires_at: expiresAt });
    response.writeHead(303, {
      ...SECURITY_HEADERS,
      location: "/",
      "set-cookie": sessionCookie(opened.session, (opened.expiresAt - this.now()) / 1000, this.identity?.tls ?? false),
    });
    response.end();
  }

  private async route(request: IncomingMessage, response: ServerResponse, url: URL, method: string): Promise<void> {
    const path = url.pathname;
    const { deps } = this;
    if (method === "GET" && this.page.serves(path)) return this.sendAsset(response, path);
    if (method === "GET" && path === "/api/v1/me") {
      return sendJson(response, 200, {
        operator: deps.config.operator ?? null,
        readOnly: deps.config.operator === undefined,
        actions: deps.config.operator ? ACTIONS : [],
      });
    }
    if (method === "GET" && path === "/api/v1/items") {
      await deps.refreshTitles?.();
      return sendJson(response, 200, listItems(deps.paths, deps.budgetLimits, deps.titleOf, deps.stores, await this.runsOn()));
    }
    if (method === "GET" && path === "/api/v1/sessions") return sendJson(response, 200, listSessions(deps.paths, deps.stores, await this.runsOn()));
    if (method === "GET" && path === "/api/v1/events") {
      const query = eventQueryOf(url.searchParams, new Date(this.now()));
      if ("problem" in query) throw new HttpError(400, query.problem);
      return sendJson(response, 200, await readEventPage(deps.paths.eventLog, query, deps.stores?.eventLog));
    }
    if (method === "GET" && path === "/api/v1/events/stream") return this.stream(request, response, url);
    const item = /^\/api\/v1\/items\/([^/]+)(?:\/(why|graph|comments|terminal\/stream)|\/actions\/([a-z-]+))$/.exec(path);
    if (item !== null) {
      const ref = canonicalItem(decodeSegment(item[1] ?? ""));
      if (ref === undefined) throw new HttpError(400, `not a work item ref: ${JSON.stringify(decodeSegment(item[1] ?? "").slice(0, 100))}`);
      const view = item[2];
      const action = item[3];
      if (method === "GET" && view === "why") return sendJson(response, 200, await this.why(ref));
      if (method === "GET" && view === "graph") return sendJson(response, 200, await this.graph(ref));
      if (method === "GET" && view === "comments") return sendJson(response, 200, await this.comments(ref));
      if (method === "GET" && view === "terminal/stream") return this.terminal(request, response, ref);
      if (method === "POST" && action !== undefined) {
        if (!isDashboardAction(action)) throw new HttpError(404, `no action ${JSON.stringify(action)}; the actions are ${ACTIONS.join(", ")}`);
        const body = await readJsonBody(request);
        const result = await runAction(deps.actions, deps.config.operator, ref, action, body);
        return sendJson(response, result.status, result.body);
      }
      throw new HttpError(405, `${method} is not served here`);
    }
    throw new HttpError(404, `nothing is served at ${path.slice(0, 200)}`);
  }

  /** One of the page's bundled files (page-assets.ts). */
  private sendAsset(response: ServerResponse, path: string): void {
    let asset;
    try {
      asset = this.page.get(path);
    } catch (error) {
      if (error instanceof PageNotBuiltError) throw new HttpError(503, error.message);
      throw error;
    }
    response.writeHead(200, { ...SECURITY_HEADERS, "content-type": asset.contentType, "content-length": asset.body.length });
    response.end(asset.body);
  }

  private async why(ref: string) {
    return whyDocument(await this.deps.whyOf(ref));
  }

  private async graph(ref: string) {
    const state = (await (this.deps.stores?.graphStates ?? openGraphStates(this.deps.paths)).get(ref)) ?? null;
    const graph = state !== null ? this.deps.graphs.get(state.graph) : undefined;
    return {
      ref,
      run:
        state === null
          ? null
          : {
              graph: state.graph,
              node: state.node,
              phase: state.phase ?? null,
              status: state.status,
              generation: state.generation,
              reason_code: state.reasonCode ?? null,
              reason: state.reason ?? null,
              started_at: state.startedAt,
              updated_at: state.updatedAt,
              history: state.history,
            },
      graph: graph !== undefined ? graphDocument(graph) : null,
    };
  }

  private async comments(ref: string) {
    if (this.deps.commentsOf === undefined) throw new HttpError(404, "this daemon serves no comments");
    try {
      return commentsDocument(await this.deps.commentsOf(ref, COMMENTS_MAX));
    } catch (error) {
      if (error instanceof NotFoundError) throw new HttpError(404, messageOf(error));
      throw new HttpError(502, `could not read the comments of ${ref} from its tracker: ${messageOf(error)}; try again, or see \`the-loop status\``);
    }
  }

  /**
   * Server-Sent Events: the item's live pane, read only — `event: screen` with each changed
   * screen (the first at once), `event: ended` when its session is gone; 404 without a live session.
   */
  /** Where each item runs, on a database several daemons share; undefined on files. */
  private async runsOn(): Promise<((ref: string) => RunsOn | null) | undefined> {
    const fleet = this.deps.fleet;
    return fleet === undefined ? undefined : runsOnOf(await fleet(), this.deps.host ?? hostname());
  }

  private async terminal(request: IncomingMessage, response: ServerResponse, ref: string): Promise<void> {
    const runsOn = (await this.runsOn())?.(ref);
    if (runsOn !== undefined && runsOn !== null && !runsOn.here) {
      throw new HttpError(
        409,
        `${ref}'s session runs on ${runsOn.host} (the daemon "${runsOn.daemon}"), not available here: \`the-loop sessions attach --work-item ${ref}\` prints the ssh command that reaches it`,
      );
    }
    const terminal = this.deps.terminal;
    const feeds = this.terminals;
    const target = terminal === undefined ? undefined : await terminal.target(ref);
    if (feeds === undefined || target === undefined) {
      throw new HttpError(404, `${ref} has no live session to show: start one (the start action, or \`the-loop sessions start --work-item ${ref}\`)`);
    }
    if (feeds.full) throw new HttpError(503, "too many terminal views are open: close one and try again");
    let finished = false;
    // Set once the watch begins; a stream that ends before (the session went meanwhile) has nothing to stop yet.
    const watching: { stop?: (() => void) | undefined } = {};
    const heartbeat = setInterval(() => response.write(": keep-alive\n\n"), HEARTBEAT_MS);
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearInterval(heartbeat);
      watching.stop?.();
      response.end();
    };
    request.on("close", finish);
    response.on("close", finish);
    response.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream; charset=utf-8", connection: "keep-alive" });
    response.write(": the-loop terminal (read only)\n\n");
    watching.stop = feeds.watch(ref, target, {
      screen: (frame) => response.write(`event: screen\ndata: ${JSON.stringify(frame)}\n\n`),
      ended: () => {
        response.write("event: ended\ndata: {}\n\n");
        finish();
      },
    });
    // Ended before watch returned: finish could not stop it then.
    if (finished) watching.stop?.();
  }

  /** Server-Sent Events: each new event the query matches, as `event: event` with its JSON; `backlog` (0–500) of the newest first. */
  private async stream(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const query = eventQueryOf(url.searchParams, new Date(this.now()));
    if ("problem" in query) throw new HttpError(400, query.problem);
    const backlog = Number(url.searchParams.get("backlog") ?? "0");
    if (!Number.isInteger(backlog) || backlog < 0 || backlog > 500) throw new HttpError(400, "backlog: a whole number from 0 to 500");
    const stop = new AbortController();
    this.streams.add(stop);
    response.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream; charset=utf-8", connection: "keep-alive" });
    response.write(": the-loop events\n\n");
    const heartbeat = setInterval(() => response.write(": keep-alive\n\n"), HEARTBEAT_MS);
    const end = (): void => stop.abort();
    request.on("close", end);
    response.on("close", end);
    try {
      const onEvent = (record: EventRecord): void => {
        response.write(`event: event\ndata: ${JSON.stringify(record)}\n\n`);
      };
      const options = { backlog, onCaughtUp: () => response.write("event: caught-up\ndata: {}\n\n") };
      // state.store: postgres: the table every host on the database writes, followed by LISTEN/NOTIFY.
      const table = this.deps.stores?.eventLog;
      if (table !== undefined) await table.follow(query.filter, onEvent, stop.signal, options);
      else await followEvents(this.deps.paths.eventLog, query.filter, onEvent, stop.signal, options);
    } finally {
      clearInterval(heartbeat);
      this.streams.delete(stop);
      response.end();
    }
  }

  private fail(response: ServerResponse, error: unknown): void {
    const status = error instanceof HttpError ? error.status : 500;
    const message = error instanceof HttpError ? error.message : `the dashboard could not answer: ${messageOf(error)}`;
    if (response.headersSent) {
      response.end();
      return;
    }
    sendJson(response, status, { error: message });
  }
}

const ACTIONS = ["start", "stop", "pause", "resume", "approve", "request-changes", "answer", "close"];

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    // Not percent-encoding: taken as written, and the ref check refuses it.
    return segment;
  }
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { ...SECURITY_HEADERS, "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  response.end(text);
}

/** The request's JSON body (an empty body is `{}`): 415 unless it says it is JSON, 413 past BODY_MAX, 400 when it does not parse. */
async function readJsonBody(request: IncomingMessage): Promise<unknown> {
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > BODY_MAX) throw new HttpError(413, `the request body is over ${BODY_MAX} bytes`);
    chunks.push(buffer);
  }
  if (size === 0) return {};
  // A form another site posts cannot say application/json without a preflight, which nothing here answers.
  if (type !== "application/json") throw new HttpError(415, "the body must be JSON (Content-Type: application/json)");
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new HttpError(400, "the body is not JSON");
  }
}
