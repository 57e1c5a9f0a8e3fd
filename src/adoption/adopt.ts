import type { Takeover, TurnIntent } from "../dispatch/dispatcher.js";
import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { adoptionDecision } from "../fleet/adopt-decide.js";
import type { Ownership } from "../fleet/ownership.js";
import { ADOPTED_REASON, isLive } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";
import type { PostgresLeases } from "../state/postgres/leases.js";
import type { PostgresTranscriptTails } from "../state/postgres/transcript-tails.js";
import type { PullRequestHead } from "../trackers/tracker.js";
import { adoptedBranch, adoptionPullRequests } from "./checkout.js";
import { adoptionBootNote, adoptionComment, tailLines } from "./tail.js";

/**
 * Adoption (docs/scale.md, "Losing a host: adoption"): a daemon looks at every lease of the
 * shared database, and each item whose owner let its lease lapse more than the grace ago, and
 * whose session was active, it adopts: it takes the lease in the item's dispatch turn (of two
 * daemons adopting at once, one takes it, under the lease's lock; an event's turn that took it
 * first adopts it the same way), closes the old session record (reason `adopted`: its
 * harness ran on the lost host and its watchdog has ended it), starts a new session through the
 * command path a `sessions start` takes — a fresh workspace and harness session here, its boot
 * prompt ending with the adoption's note and the transcript tail the database holds — posts a
 * marked comment and records `session.adopted`. A paused item stays paused: nothing is adopted
 * into running (a resume later starts it where its owner is then).
 */

export interface AdopterOptions {
  readonly leases: Pick<PostgresLeases, "fleet">;
  readonly tails: Pick<PostgresTranscriptTails, "read">;
  readonly ownership: Pick<Ownership, "name">;
  readonly graceMs: number;
  readonly session: (ref: string) => SessionRecord | undefined;
  readonly closeSession: (ref: string, reason: string) => Promise<SessionRecord | undefined>;
  /**
   * A turn in the item's dispatch queue that takes its lease (the dispatcher's takeOver): taken
   * from the lost daemon, the take hands the item to `adoptTaken`, in that turn. Another daemon
   * that adopted it first, or its owner back, leaves the turn doing nothing.
   */
  readonly takeOver: (ref: string) => Promise<void>;
  readonly comment: (ref: string, text: string) => Promise<void>;
  /**
   * A pull request's head, for the branch the adopted session's checkout is made on
   * (checkout.ts); absent, or undefined for a ref, where the tracker has none to give.
   */
  readonly pullRequestHead?: (ref: string) => Promise<PullRequestHead | undefined>;
  readonly events: EventSink;
  readonly warn: (message: string) => void;
}

/** The close reason of the turn's own work, when it closes or stops the item it took over. */
const CLOSED_AS: Readonly<Record<TurnIntent, string>> = { close: "item-closed", stop: "stopped" };

export class Adopter {
  private running: Promise<number> | undefined;
  private started = 0;

  constructor(private readonly options: AdopterOptions) {}

  /** One look at every lease; how many items were adopted into a running session. One look at a time. */
  once(): Promise<number> {
    return (this.running ??= this.look().finally(() => (this.running = undefined)));
  }

  private async look(): Promise<number> {
    const { leases: rows, now } = await this.options.leases.fleet();
    const before = this.started;
    const orphans: string[] = [];
    for (const lease of rows) {
      let record: SessionRecord | undefined;
      try {
        record = this.options.session(lease.item);
      } catch (error) {
        // A damaged record is reported where it is read for work; nothing is adopted from it.
        this.options.warn(`could not read the session of ${lease.item} to see whether to adopt it: ${messageOf(error)}`);
        continue;
      }
      const status = record !== undefined && isLive(record) ? record.status : undefined;
      const decision = adoptionDecision(
        lease,
        status === "active" || status === "paused" ? status : undefined,
        this.options.ownership.name,
        now,
        this.options.graceMs,
      );
      if (decision === "adopt") orphans.push(lease.item);
    }
    // All at once, each in its own item's turn: a lost host's items are adopted within one look
    // (the spawns share the dispatcher's limit of heavy work), not one after another.
    const taken = await Promise.allSettled(orphans.map((item) => this.options.takeOver(item)));
    taken.forEach((result, index) => {
      if (result.status === "rejected") this.options.warn(`could not adopt ${orphans[index]}: ${messageOf(result.reason)}`);
    });
    return this.started - before;
  }

  /**
   * Adopts the item whose lease this daemon just took from `from`, within the turn that took it
   * (any turn: this look's, or an event's or a command's that came first), so nothing else acts on
   * the lost host's record meanwhile. Only an active session is adopted: a paused one stays
   * paused, and a closed one has nothing to adopt. `start` applies the new start in that turn.
   * A turn whose own work closes the item (its closing) or stops it starts no agent: that work
   * closes the lost host's record through the one close path (reason `item-closed` or `stopped`),
   * whose harness and tmux session the lost host's watchdog has ended.
   */
  readonly adoptTaken: Takeover = async ({ item, from }, start, intent) => {
    const { events } = this.options;
    const self = this.options.ownership.name;
    const current = this.options.session(item);
    if (current?.status !== "active") return "none";
    if (intent !== undefined) {
      events.emit("session.adopted", { work_item: item, daemon: self, from, tail_lines: 0, started: false, closed_as: CLOSED_AS[intent] });
      return "none";
    }
    let tail: string | undefined;
    try {
      tail = (await this.options.tails.read(item))?.tail;
    } catch (error) {
      this.options.warn(`could not read the transcript tail of ${item}; its new session starts without it: ${messageOf(error)}`);
    }
    const lines = tailLines(tail);
    const branch = await this.branchOf(current);
    await this.options.closeSession(item, ADOPTED_REASON);
    let started = false;
    let queued = false;
    let problem: string | undefined;
    try {
      const outcome = await start({
        ref: item,
        command: "start",
        source: "cli",
        actor: "the-loop",
        bootNote: adoptionBootNote({ from, self, ...(tail !== undefined ? { tail } : {}), ...(branch !== undefined ? { branch } : {}) }),
        ...(branch !== undefined ? { branch } : {}),
      });
      started = outcome.applied && outcome.problem === undefined && outcome.session?.status === "active";
      // A full cap (routing.limits): the start waits in the shared queue, its boot note with it (registry/start-queue.ts).
      queued = outcome.applied && outcome.queued === true;
      if (!outcome.applied) problem = outcome.message;
      else if (outcome.problem !== undefined && !queued) problem = outcome.problem;
    } catch (error) {
      problem = messageOf(error);
    }
    try {
      await this.options.comment(item, adoptionComment({ from, self, started, queued, lines }));
    } catch (error) {
      this.options.warn(`adopted ${item}, but could not comment on it: ${messageOf(error)}`);
    }
    events.emit("session.adopted", {
      work_item: item,
      daemon: self,
      from,
      tail_lines: lines,
      started,
      ...(queued ? { queued } : {}),
      ...(problem !== undefined ? { error: problem } : {}),
    });
    if (started) this.started += 1;
    return queued ? "queued" : "adopted";
  };

  /**
   * The branch of the previous session's work, for the fresh checkout: its record's, else its pull
   * requests' heads, looked up at once. A head that cannot be read is passed over (reported): the
   * checkout is then made on the next one, or the default branch.
   */
  private async branchOf(previous: SessionRecord): Promise<string | undefined> {
    const lookUp = this.options.pullRequestHead;
    const refs = lookUp === undefined ? [] : adoptionPullRequests(previous);
    const heads = new Map<string, PullRequestHead>();
    await Promise.all(
      refs.map(async (ref) => {
        try {
          const head = await lookUp?.(ref);
          if (head !== undefined) heads.set(ref, head);
        } catch (error) {
          this.options.warn(`could not read ${ref} for the branch of ${previous.workItem.ref}'s adopted checkout: ${messageOf(error)}`);
        }
      }),
    );
    return adoptedBranch(previous, heads);
  }
}
