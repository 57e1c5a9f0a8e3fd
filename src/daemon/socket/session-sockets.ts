import { chmodSync, mkdirSync, rmdirSync } from "node:fs";
import { dirname } from "node:path";
import { UsageError, errnoOf, messageOf } from "../../errors.js";
import type { EventSink } from "../../events/log.js";
import { RefError, formatWorkItemRef, parseWorkItemRef } from "../../workitem/index.js";
import { sessionSocketPath } from "./path.js";
import type { RpcCaller, RpcHandler } from "./protocol.js";
import { serveRpcAt } from "./rpc.js";
import type { RpcServer } from "./rpc.js";

/**
 * One socket per work item with a live session: the way the agent in that session reaches
 * the-loop (`the-loop ask`, `the-loop graph complete`), and nothing else. The session is told its
 * path in THE_LOOP_SESSION_SOCKET, so a command inside it needs no config and no state root —
 * which a sandboxed session cannot see. A request on it still carries the session's credential,
 * and acts for the socket's own work item only: holding the socket of one session gives no
 * reach into another's. The daemon opens a socket for every live session it finds (its own
 * spawns and those a CLI start made) and closes it when the session is no longer live.
 */

/** The daemon socket's methods a session's socket takes: the session's own question, claim, `why` and usage (and `graph.status`, its own). */
const SESSION_METHODS = ["session.ask", "graph.complete", "session.why", "session.usage"] as const;

function canonical(written: string): string {
  try {
    return formatWorkItemRef(parseWorkItemRef(written));
  } catch (error) {
    throw new UsageError(error instanceof RefError ? error.message : "not a work item ref");
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The daemon socket's methods as a session's socket serves them, for `bound` only. A request
 * without the session's credential, or with another item's, is refused before the method runs
 * (which checks the credential itself). A claim through it is under the daemon's own config —
 * the session's socket belongs to this daemon — so the config file the command would name is the
 * daemon's; an operator command is refused by name.
 */
export function sessionSocketHandlers(
  bound: string,
  handlers: Readonly<Record<string, RpcHandler>>,
  configFile: string | null,
  graphStateOf?: (ref: string) => Promise<unknown>,
): Record<string, RpcHandler> {
  const own = (rpc: RpcCaller): RpcCaller => {
    if (rpc.session === undefined) {
      throw new UsageError(`this socket is the session of ${bound}: a request on it carries that session's credential (THE_LOOP_SESSION_TOKEN)`);
    }
    const named = canonical(rpc.session.workItem);
    if (named !== bound) throw new UsageError(`this socket serves the session of ${bound} only; the request's credential names ${named}`);
    return rpc;
  };
  const served: Record<string, RpcHandler> = {
    "graph.force": () =>
      Promise.reject(new UsageError("graph force is an operator command; a session's socket does not take it (the operator runs it from their own terminal)")),
  };
  if (graphStateOf !== undefined) {
    // The session's own run, as `graph status` shows it: the record, or null without one.
    served["graph.status"] = async (_params, rpc) => {
      own(rpc);
      return (await graphStateOf(bound)) ?? null;
    };
  }
  for (const method of SESSION_METHODS) {
    const handler = handlers[method];
    if (handler === undefined) continue;
    served[method] = async (params, rpc) => {
      const caller = own(rpc);
      const given = method === "graph.complete" && isRecord(params) ? { ...params, configFile } : params;
      return await handler(given, caller);
    };
  }
  return served;
}

/** The most of the daemon's time the watch spends listing sessions. */
const LISTING_SHARE = 0.05;

export interface SessionSocketsOptions {
  readonly stateRoot: string;
  /** The daemon socket's methods, which a session's socket serves for its own item. */
  readonly handlers: Readonly<Record<string, RpcHandler>>;
  /** The daemon's config file (resolved), or null for none. */
  readonly configFile: string | null;
  /** The item's graph state record (`graph.status` on its session's socket); absent: the method is not served. */
  readonly graphStateOf?: (ref: string) => Promise<unknown>;
  /** The work items with a live session now (read at each reconcile). */
  readonly liveItems: () => readonly string[];
  /**
   * What changes whenever a session record is written (the registry folder's mtime): a pass
   * (`watch`) lists the sessions again only when it moved. Absent: every pass lists them.
   */
  readonly changeStamp?: () => number | string | undefined;
  readonly events: EventSink;
  readonly warn: (message: string) => void;
  /** The clock listings are timed and spaced by, in milliseconds (default performance.now). */
  readonly now?: () => number;
}

export class SessionSockets {
  private readonly open = new Map<string, RpcServer>();
  private readonly failed = new Set<string>();
  private reconciling: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** How long the last listing of the live sessions took: what watch() spaces its passes by. */
  private listingMs = 0;
  private closed = false;

  private readonly now: () => number;

  constructor(private readonly options: SessionSocketsOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** The work items whose session's socket is open. */
  served(): string[] {
    return [...this.open.keys()];
  }

  /** Opens a socket for every live session that has none, and closes those whose session ended. One at a time. */
  reconcile(): Promise<void> {
    this.reconciling ??= this.reconcileOnce().finally(() => (this.reconciling = undefined));
    return this.reconciling;
  }

  private async reconcileOnce(): Promise<void> {
    if (this.closed) return;
    let live: Set<string>;
    try {
      const started = this.now();
      live = new Set(this.options.liveItems());
      this.listingMs = this.now() - started;
    } catch (error) {
      // The registry could not be listed now: nothing is closed on a guess, the next pass looks again.
      this.options.warn(`could not list the live sessions for their sockets: ${messageOf(error)}`);
      return;
    }
    for (const [ref, server] of this.open) {
      if (live.has(ref)) continue;
      this.open.delete(ref);
      await server.close();
      removeEmptyFolder(dirname(server.path), this.options.warn);
      this.options.events.emit("session.socket_closed", { work_item: ref });
    }
    for (const ref of this.failed) if (!live.has(ref)) this.failed.delete(ref);
    for (const ref of live) {
      if (this.open.has(ref) || this.failed.has(ref) || this.closed) continue;
      const path = sessionSocketPath(this.options.stateRoot, ref);
      // No place for it (a path too long for a socket address): the session reaches the daemon's own socket instead.
      if (path === undefined) continue;
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        chmodSync(dirname(path), 0o700);
        const server = await serveRpcAt(path, sessionSocketHandlers(ref, this.options.handlers, this.options.configFile, this.options.graphStateOf));
        this.open.set(ref, server);
        this.options.events.emit("session.socket_opened", { work_item: ref });
      } catch (error) {
        // Tried once per live session: the warning is not repeated every pass.
        this.failed.add(ref);
        this.options.warn(`could not open the socket of ${ref}'s session at ${path}: ${messageOf(error)}`);
      }
    }
  }

  /** Reconciles every `intervalMs` while the registry changes; stopped by close(). */
  watch(intervalMs: number): void {
    let seen: number | string | undefined;
    let last = 0;
    this.timer = setInterval(() => {
      // Every delivery rewrites a record, so on a busy daemon the folder moves at every tick; a
      // listing is not made more often than LISTING_SHARE of the time allows (10,000 records: ~2 s).
      if (this.now() - last < this.listingMs / LISTING_SHARE) return;
      const stamp = this.options.changeStamp?.();
      if (stamp !== undefined && stamp === seen) return;
      seen = stamp;
      last = this.now();
      void this.reconcile();
    }, intervalMs);
    this.timer.unref();
  }

  /** Closes every socket; a reconcile after it does nothing. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.reconciling;
    const servers = [...this.open.values()];
    this.open.clear();
    await Promise.all(servers.map((server) => server.close()));
  }
}

/**
 * The session's socket folder, once its session is over. Only when empty: a daemon that took the
 * state root over since may have its own socket there. (A daemon that stops keeps every folder: a
 * session outlives it, and its sandbox holds the folder bound for the next daemon's socket.)
 */
function removeEmptyFolder(dir: string, warn: (message: string) => void): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    if (!["ENOENT", "ENOTEMPTY", "EEXIST"].includes(errnoOf(error) ?? "")) warn(`could not remove the session socket folder ${dir}: ${messageOf(error)}`);
  }
}
