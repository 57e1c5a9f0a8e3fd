import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import type { InboundEvent } from "../routing/inbound.js";
import { INBOX_CHANNEL } from "../state/postgres/inbox.js";
import type { InboxRow, PostgresInbox } from "../state/postgres/inbox.js";
import type { DaemonRow, LeaseRow } from "../state/postgres/leases.js";
import { eventKey, fleetView, inboxAnnouncement, inboxTurn } from "./decide.js";

/**
 * A daemon's side of the inbox (docs/scale.md, "Many daemons, one database"). `sendEvent` records
 * an event for an item another live daemon owns, addressed to that owner, instead of dropping it.
 * `serve` LISTENs on the inbox's channel and runs the rows addressed to this daemon, in id order,
 * through its normal dispatch — the owner's router decides again, authorization first — and marks
 * each done once it settled; a sweep every `sweepMs` runs what a lost notification missed and takes
 * the rows of a daemon that is gone (inboxTurn).
 */

/** A LISTEN connection (a pg Client, not yet connected). */
export interface ListenClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  on(event: "notification", listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: "error" | "end", listener: () => void): unknown;
  end(): Promise<void>;
}

/** The fleet's rows with the database's clock (PostgresLeases.fleet). */
export interface FleetRows {
  fleet(): Promise<{ readonly daemons: readonly DaemonRow[]; readonly leases: readonly LeaseRow[]; readonly now: Date }>;
}

/** What the owner does with a row: an event through its dispatch, a command through its handler (its answer is the row's). */
export interface InboxHandlers {
  event(event: InboundEvent): Promise<{ readonly settled: boolean }>;
  command(body: unknown, sender: string, item: string): Promise<unknown>;
}

export interface ForwarderOptions {
  readonly inbox: PostgresInbox;
  readonly fleet: FleetRows;
  /** This daemon's name (state.daemonName). */
  readonly name: string;
  readonly leaseMs: number;
  /** state.adoptGraceSeconds, in ms (0: none). */
  readonly graceMs?: number;
  /** How often the inbox is looked at without a notification (state.heartbeatSeconds). */
  readonly sweepMs: number;
  readonly events: EventSink;
  readonly warn: (message: string) => void;
  readonly listener: () => ListenClient;
  /** How long a done row keeps its key, so a late redelivery is still recorded once (default a day). */
  readonly keepDoneMs?: number;
}

/** Who refused an event here: the item and its live owner (OwnedElsewhereError's). */
export interface Refusal {
  readonly item: string;
  readonly owner: string;
}

const RECONNECT_MS = 1_000;
const DAY_MS = 24 * 3600 * 1000;

export class Forwarder {
  private handlers: InboxHandlers | undefined;
  private client: ListenClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reconnecting: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Rows handed to the dispatch and not settled yet. */
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly options: ForwarderOptions) {}

  /** Records `event` for the item's owner; whether it is in the inbox (false: it could not be written, said in a warning). */
  readonly sendEvent = async (event: InboundEvent, refusal: Refusal): Promise<boolean> => {
    const { inbox, name, events } = this.options;
    try {
      const posted = await inbox.post({
        key: eventKey(event.deliveryId),
        kind: "event",
        item: refusal.item,
        addressee: refusal.owner,
        sender: name,
        body: event,
      });
      events.emit("forward.sent", {
        work_item: refusal.item,
        daemon: name,
        owner: refusal.owner,
        kind: "event",
        outcome: posted.outcome,
        delivery_id: event.deliveryId,
      });
      return true;
    } catch (error) {
      this.options.warn(
        `could not forward the event ${event.deliveryId} of ${refusal.item} to the daemon "${refusal.owner}" that owns it: ${messageOf(error)}`,
      );
      return false;
    }
  };

  /** Listens for the rows addressed to this daemon and runs them, now and at each announcement or sweep. */
  async serve(handlers: InboxHandlers): Promise<void> {
    this.handlers = handlers;
    await this.listen();
    this.timer = setInterval(() => void this.pump(), this.options.sweepMs);
    this.timer.unref();
    await this.pump();
  }

  /** Stops taking rows and waits for the ones under way (the dispatch's drain waits for their effects). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.reconnecting);
    const client = this.client;
    this.client = undefined;
    // The listener is being given up: an error ending it says nothing more.
    await client?.end().catch(() => undefined);
    await this.pumping;
  }

  /** One look at the inbox (serialised: a call during a look makes one more look after it). */
  pump(): Promise<void> {
    if (this.stopped || this.handlers === undefined) return Promise.resolve();
    if (this.pumping !== undefined) {
      this.again = true;
      return this.pumping;
    }
    this.pumping = (async () => {
      do {
        this.again = false;
        try {
          await this.look();
        } catch (error) {
          this.options.warn(
            `could not read the inbox of forwarded events and commands: ${messageOf(error)}; it is read again within ${this.options.sweepMs / 1000} s`,
          );
        }
      } while (this.again && !this.stopped);
    })().finally(() => (this.pumping = undefined));
    return this.pumping;
  }

  private async listen(): Promise<void> {
    const client = this.options.listener();
    client.on("notification", (message) => {
      if (message.channel !== INBOX_CHANNEL) return;
      const announced = inboxAnnouncement(message.payload);
      if (announced !== undefined && !announced.done && announced.addressee === this.options.name) void this.pump();
    });
    const lost = (): void => {
      if (this.client !== client) return;
      this.client = undefined;
      // The connection is being given up: an error ending it says nothing more.
      client.end().catch(() => undefined);
      this.reconnect();
    };
    client.on("error", lost);
    client.on("end", lost);
    await client.connect();
    await client.query(`LISTEN ${INBOX_CHANNEL}`);
    this.client = client;
  }

  private reconnect(): void {
    if (this.stopped) return;
    this.reconnecting = setTimeout(() => {
      this.listen().then(
        () => void this.pump(),
        () => this.reconnect(),
      );
    }, RECONNECT_MS);
    this.reconnecting.unref();
  }

  private async look(): Promise<void> {
    const { inbox, name } = this.options;
    const rows = (await inbox.pending()).filter((row) => !this.running.has(row.id));
    if (rows.length === 0) return;
    const fleet = fleetView(await this.options.fleet.fleet(), this.options.leaseMs, this.options.graceMs);
    for (const row of rows) {
      if (this.stopped) return;
      const turn = inboxTurn(row, name, fleet);
      if (turn.kind === "wait") continue;
      if (turn.kind === "give-up") {
        if (await inbox.done(row.id, row.addressee, { refused: `handed on ${row.hops} times without an owner taking it` })) {
          this.options.events.emit("forward.dropped", { work_item: row.item, daemon: name, from: row.addressee, kind: row.kind, hops: row.hops });
        }
        continue;
      }
      if (turn.kind === "readdress") {
        if (!(await inbox.readdress(row.id, row.addressee, turn.to))) continue;
        this.options.events.emit("forward.readdressed", { work_item: row.item, daemon: name, from: row.addressee, to: turn.to, kind: row.kind });
        if (turn.to !== name) continue;
      }
      this.run(row);
    }
    await inbox.trim(this.options.keepDoneMs ?? DAY_MS);
  }

  /** Hands the row to the dispatch (not awaited: rows of one item keep their order in its queue) and marks it done once settled. */
  private run(row: InboxRow): void {
    const handlers = this.handlers;
    if (handlers === undefined) return;
    const { inbox, name, events } = this.options;
    const deliveryId = row.kind === "event" ? (row.body as InboundEvent).deliveryId : undefined;
    events.emit("forward.received", {
      work_item: row.item,
      daemon: name,
      from: row.sender,
      kind: row.kind,
      ...(deliveryId !== undefined ? { delivery_id: deliveryId } : {}),
    });
    const work = async (): Promise<void> => {
      if (row.kind === "event") {
        const result = await handlers.event(row.body as InboundEvent);
        // Not settled (the dispatch is draining, a record did not read): the row stays for the next look.
        if (result.settled) await inbox.done(row.id, name);
        return;
      }
      if (!(await inbox.take(row.id, name))) return;
      let answer: unknown;
      try {
        answer = await handlers.command(row.body, row.sender, row.item);
      } catch (error) {
        answer = { error: messageOf(error), ...(error instanceof Error && "owner" in error ? { owner: String(error.owner) } : {}) };
      }
      await inbox.done(row.id, name, answer);
    };
    const ran = work()
      .catch((error: unknown) => this.options.warn(`could not carry out the forwarded ${row.kind} ${row.key} of ${row.item}: ${messageOf(error)}`))
      .finally(() => this.running.delete(row.id));
    this.running.set(row.id, ran);
  }
}
