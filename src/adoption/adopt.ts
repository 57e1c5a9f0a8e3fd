import type { ControlOutcome, ControlRequest } from "../control/types.js";
import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { adoptionDecision } from "../fleet/adopt-decide.js";
import { OwnedElsewhereError } from "../fleet/ownership.js";
import type { Ownership } from "../fleet/ownership.js";
import { isLive } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";
import type { LeaseRow, PostgresLeases } from "../state/postgres/leases.js";
import type { PostgresTranscriptTails } from "../state/postgres/transcript-tails.js";
import { adoptionBootNote, adoptionComment, tailLines } from "./tail.js";

/**
 * Adoption (docs/scale.md, "Losing a host: adoption"): a daemon looks at every lease of the
 * shared database, and each item whose owner let its lease lapse more than the grace ago, and
 * whose session was active, it adopts: it takes the lease (of two daemons adopting at once, one
 * takes it, under the lease's lock), closes the old session record (reason `adopted`: its
 * harness ran on the lost host and its watchdog has ended it), starts a new session through the
 * command path a `sessions start` takes — a fresh workspace and harness session here, its boot
 * prompt ending with the adoption's note and the transcript tail the database holds — posts a
 * marked comment and records `session.adopted`. A paused item stays paused: nothing is adopted
 * into running (a resume later starts it where its owner is then).
 */

export interface AdopterOptions {
  readonly leases: Pick<PostgresLeases, "fleet">;
  readonly tails: Pick<PostgresTranscriptTails, "read">;
  readonly ownership: Ownership;
  readonly graceMs: number;
  readonly session: (ref: string) => SessionRecord | undefined;
  readonly closeSession: (ref: string, reason: string) => Promise<SessionRecord | undefined>;
  /** The dispatcher's command path (`sessions start`). */
  readonly start: (request: ControlRequest) => Promise<ControlOutcome>;
  readonly comment: (ref: string, text: string) => Promise<void>;
  readonly events: EventSink;
  readonly warn: (message: string) => void;
}

/** The reason an adopted session's old record closes with. */
export const ADOPTED = "adopted";

export class Adopter {
  private running: Promise<number> | undefined;

  constructor(private readonly options: AdopterOptions) {}

  /** One look at every lease; how many items were adopted. One look at a time. */
  once(): Promise<number> {
    return (this.running ??= this.look().finally(() => (this.running = undefined)));
  }

  private async look(): Promise<number> {
    const { leases: rows, now } = await this.options.leases.fleet();
    let adopted = 0;
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
      if (decision !== "adopt" || record === undefined) continue;
      if (await this.adopt(lease, record)) adopted += 1;
    }
    return adopted;
  }

  private async adopt(lease: LeaseRow, seen: SessionRecord): Promise<boolean> {
    const { ownership, events } = this.options;
    const item = lease.item;
    const self = ownership.name;
    try {
      await ownership.acquire([item]);
    } catch (error) {
      // Its owner came back and renewed it, or another daemon adopted it first: theirs.
      if (error instanceof OwnedElsewhereError) return false;
      throw error;
    }
    const current = this.options.session(item);
    if (current?.status !== "active" || current.harnessSessionId !== seen.harnessSessionId) return false;
    let tail: string | undefined;
    try {
      tail = (await this.options.tails.read(item))?.tail;
    } catch (error) {
      this.options.warn(`could not read the transcript tail of ${item}; its new session starts without it: ${messageOf(error)}`);
    }
    const lines = tailLines(tail);
    await this.options.closeSession(item, ADOPTED);
    let started = false;
    let queued = false;
    let problem: string | undefined;
    try {
      const outcome = await this.options.start({
        ref: item,
        command: "start",
        source: "cli",
        actor: "the-loop",
        bootNote: adoptionBootNote({ from: lease.owner, self, ...(tail !== undefined ? { tail } : {}) }),
      });
      started = outcome.applied && outcome.problem === undefined && outcome.session?.status === "active";
      // A full cap (routing.limits): the start waits in the shared queue, its boot note with it (registry/start-queue.ts).
      queued = outcome.applied && outcome.problem === undefined && outcome.effect === "start-pending";
      if (!outcome.applied) problem = outcome.message;
      else if (outcome.problem !== undefined) problem = outcome.problem;
    } catch (error) {
      problem = messageOf(error);
    }
    try {
      await this.options.comment(item, adoptionComment({ from: lease.owner, self, started, queued, lines }));
    } catch (error) {
      this.options.warn(`adopted ${item}, but could not comment on it: ${messageOf(error)}`);
    }
    events.emit("session.adopted", {
      work_item: item,
      daemon: self,
      from: lease.owner,
      tail_lines: lines,
      started,
      ...(queued ? { queued } : {}),
      ...(problem !== undefined ? { error: problem } : {}),
    });
    return started;
  }
}
