import { randomUUID } from "node:crypto";
import { z } from "zod";
import { EXIT_FAILURE, ExitError, UsageError } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { INBOX_CHANNEL } from "../state/postgres/inbox.js";
import type { PostgresInbox } from "../state/postgres/inbox.js";
import { commandRoute, fleetView, inboxAnnouncement } from "./decide.js";
import type { CommandRoute } from "./decide.js";
import type { FleetRows, ListenClient } from "./forwarder.js";

/**
 * A CLI command on an item another live daemon owns goes to that owner through the inbox
 * (docs/scale.md, "Many daemons, one database"): a command row with the operator's identity as
 * the CLI resolved it, which the owner checks again (checkedCommand) before it runs it with its
 * own dispatch; the CLI waits, bounded, for the answer the owner writes into the row. A command
 * nobody took in time is withdrawn — it never runs — and the CLI refuses, naming the owner.
 */

const name = z.string().min(1).max(200);
const ref = z.string().min(1).max(300);

/** What a command row carries: the command and who gave it (never a credential). */
export const commandBodySchema = z.discriminatedUnion("command", [
  z.strictObject({
    command: z.literal("control"),
    request: z.strictObject({
      ref,
      command: z.enum(["start", "stop", "pause", "resume"]),
      source: z.literal("cli"),
      actor: name,
      note: z.string().max(2000).optional(),
      graph: name.optional(),
      harness: name.optional(),
    }),
  }),
  z.strictObject({ command: z.literal("close"), ref, actor: name }),
  z.strictObject({
    command: z.literal("graph.complete"),
    ref,
    node: name.nullish(),
    actor: z.strictObject({ kind: z.enum(["operator", "agent"]), id: name }),
    configFile: z.string().max(4096).nullable(),
  }),
]);

export type CommandBody = z.infer<typeof commandBodySchema>;

/** The body of a row as the owner takes it: parsed, its item the row's. Throws a UsageError naming what is wrong. */
export function checkedCommand(body: unknown, item: string): CommandBody {
  const parsed = commandBodySchema.safeParse(body);
  if (!parsed.success) throw new UsageError(`the forwarded command does not read: ${parsed.error.issues[0]?.message ?? "not a command"}`);
  const named = parsed.data.command === "control" ? parsed.data.request.ref : parsed.data.ref;
  if (named !== item) throw new UsageError(`the forwarded command names ${named}, its row ${item}`);
  return parsed.data;
}

export interface CommandForwarding {
  readonly inbox: PostgresInbox;
  readonly fleet: FleetRows;
  readonly listener: () => ListenClient;
  /** This host's daemon's name (state.daemonName, else the host's): who sends, and whose items run here. */
  readonly local: string;
  readonly leaseMs: number;
  /** state.adoptGraceSeconds, in ms (0: none). */
  readonly graceMs?: number;
  /** state.forwardWaitSeconds, in ms: how long a command waits to be taken by the owner, and again for its answer. */
  readonly waitMs: number;
  readonly events: EventSink;
}

/** Where the command on `item` goes now. */
export async function routeOf(forwarding: CommandForwarding, item: string): Promise<CommandRoute> {
  return commandRoute(item, forwarding.local, fleetView(await forwarding.fleet.fleet(), forwarding.leaseMs, forwarding.graceMs));
}

/** An answer that is the owner's refusal: its message, as the owner wrote it. */
function refusalOf(answer: unknown): string | undefined {
  if (typeof answer !== "object" || answer === null || !("error" in answer)) return undefined;
  return String(answer.error);
}

/**
 * Sends the command to the item's owner and answers what the owner answered; throws the owner's
 * error as its own, or, when nobody takes it within `forwarding.waitMs`, refuses naming the owner.
 */
export async function forwardCommand(forwarding: CommandForwarding, route: Extract<CommandRoute, { kind: "owner" }>, body: CommandBody): Promise<unknown> {
  const timeoutMs = forwarding.waitMs;
  const item = body.command === "control" ? body.request.ref : body.ref;
  const where = `the daemon "${route.owner}"${route.host !== undefined ? ` on ${route.host}` : ""}`;
  const client = forwarding.listener();
  let wake: () => void = () => undefined;
  let id = "";
  client.on("notification", (message) => {
    if (message.channel === INBOX_CHANNEL && inboxAnnouncement(message.payload)?.id === id) wake();
  });
  // An error of the waiting connection: the bounded re-reads below still see the answer.
  client.on("error", () => undefined);
  client.on("end", () => undefined);
  await client.connect();
  try {
    await client.query(`LISTEN ${INBOX_CHANNEL}`);
    const posted = await forwarding.inbox.post({
      key: `command:${randomUUID()}`,
      kind: "command",
      item,
      addressee: route.owner,
      sender: forwarding.local,
      body,
    });
    id = posted.id;
    forwarding.events.emit("forward.sent", { work_item: item, daemon: forwarding.local, owner: route.owner, kind: "command", outcome: posted.outcome });
    const answered = async (deadline: number): Promise<{ readonly answer: unknown } | undefined> => {
      for (;;) {
        const row = await forwarding.inbox.byId(id);
        if (row?.doneAt !== null && row !== undefined) return { answer: row.answer };
        const left = deadline - Date.now();
        if (left <= 0) return undefined;
        // Woken by the row's announcement, or after a second at most (an announcement lost with its connection).
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 1_000));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    };
    let got = await answered(Date.now() + timeoutMs);
    if (got === undefined) {
      const seconds = Math.round(timeoutMs / 1000);
      const withdrawn = await forwarding.inbox.withdraw(id, forwarding.local, { error: `withdrawn: not taken within ${seconds} s` });
      if (withdrawn) {
        throw new ExitError(
          `${item} is owned by ${where}, which did not take the forwarded ${body.command} within ${seconds} s: nothing was done, here or there; ` +
            `check that daemon (the-loop status${route.host !== undefined ? ` on ${route.host}` : ""}), or give the command on its host`,
          EXIT_FAILURE,
          "conflict",
        );
      }
      // Taken meanwhile: it runs there; its answer is worth another wait.
      got = await answered(Date.now() + timeoutMs);
      if (got === undefined) {
        throw new ExitError(
          `${where} took the forwarded ${body.command} of ${item} but has not answered within ${2 * seconds} s: it may still carry it out; see \`the-loop events --work-item ${item}\``,
          EXIT_FAILURE,
          "failure",
        );
      }
    }
    const refusal = refusalOf(got.answer);
    if (refusal !== undefined) throw new ExitError(`${where} refused the forwarded ${body.command} of ${item}: ${refusal}`, EXIT_FAILURE, "conflict");
    return got.answer;
  } finally {
    // The waiting connection is done with: an error ending it says nothing more.
    await client.end().catch(() => undefined);
  }
}
