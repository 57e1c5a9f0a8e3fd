import type { CliConfig } from "../config/schema.js";
import type { Takeover } from "../dispatch/dispatcher.js";
import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import type { Ownership } from "../fleet/ownership.js";
import type { SessionRecord, SessionStatus } from "../registry/record.js";
import type { PostgresDatabase } from "../state/postgres/database.js";
import { PostgresLeases } from "../state/postgres/leases.js";
import { PostgresTranscriptTails } from "../state/postgres/transcript-tails.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import { Adopter } from "./adopt.js";
import { TAIL_EVERY_MS } from "./tail.js";
import { TailKeeper } from "./tail-keeper.js";

export interface LostHostsOptions {
  readonly config: CliConfig;
  readonly database: PostgresDatabase | undefined;
  readonly ownership: Ownership;
  readonly registry: {
    get(ref: string): SessionRecord | undefined;
    list(options: { status?: SessionStatus | "live" }): { readonly records: readonly SessionRecord[] };
    close(ref: string, reason: string, at: Date): Promise<SessionRecord | undefined>;
  };
  readonly capture: (target: string) => Promise<string>;
  readonly trackers: Pick<TrackerSet, "forRef">;
  /** The dispatcher's turn that takes an item's lease (Dispatcher.takeOver), and where the adoption it then runs is set (onTakeover). */
  readonly takeOver: (ref: string) => Promise<void>;
  readonly onTakeover: (takeover: Takeover) => void;
  readonly events: EventSink;
  readonly signal: AbortSignal;
  readonly warn: (message: string) => void;
}

/**
 * While the daemon runs on a shared database: its sessions' transcript tails are kept every
 * TAIL_EVERY_MS, and a lost daemon's items are adopted, looked for at every heartbeat
 * (docs/scale.md, "Losing a host"). Nothing on files. Resolves once `signal` aborts.
 */
export function watchLostHosts(options: LostHostsOptions): Promise<void> {
  const { database, ownership, registry, signal, warn } = options;
  if (database === undefined || !ownership.shared || signal.aborted) return Promise.resolve();
  const tails = new PostgresTranscriptTails(database.pool);
  const keeper = new TailKeeper({
    tails,
    capture: options.capture,
    daemon: ownership.name,
    warn,
    sessions: () =>
      registry
        .list({ status: "active" })
        .records.filter((record) => ownership.holds(record.workItem.ref))
        .map((record) => ({ ref: record.workItem.ref, target: record.tmuxTarget })),
  });
  const adopter = new Adopter({
    leases: new PostgresLeases(database.pool),
    tails,
    ownership,
    graceMs: options.config.state.adoptGraceSeconds * 1000,
    session: (ref) => registry.get(ref),
    closeSession: (ref, reason) => registry.close(ref, reason, new Date()),
    takeOver: options.takeOver,
    comment: async (ref, text) => {
      await options.trackers.forRef(ref).postComment(parseWorkItemRef(ref), markSelfAuthored(text));
    },
    pullRequestHead: async (ref) => {
      const tracker = options.trackers.forRef(ref);
      return tracker.pullRequest === undefined ? undefined : tracker.pullRequest(parseWorkItemRef(ref));
    },
    events: options.events,
    warn,
  });
  // Whichever turn takes a lost daemon's lease first — the look below, an event's, a command's — adopts the item in it.
  options.onTakeover(adopter.adoptTaken);
  let failing = false;
  const adopt = (): void => {
    adopter.once().then(
      () => (failing = false),
      (error: unknown) => {
        if (!failing) warn(`could not look for the items of lost daemons to adopt: ${messageOf(error)}`);
        failing = true;
      },
    );
  };
  // A look never overlaps the one before: a slow one makes the next wait.
  let keeping = false;
  const keep = (): void => {
    if (keeping) return;
    keeping = true;
    void keeper
      .once()
      .catch((error: unknown) => warn(`could not keep the transcript tails: ${messageOf(error)}`))
      .finally(() => (keeping = false));
  };
  const timers = [setInterval(keep, TAIL_EVERY_MS), setInterval(adopt, options.config.state.heartbeatSeconds * 1000)];
  for (const timer of timers) timer.unref();
  return new Promise((resolve) => {
    signal.addEventListener(
      "abort",
      () => {
        for (const timer of timers) clearInterval(timer);
        resolve();
      },
      { once: true },
    );
  });
}
