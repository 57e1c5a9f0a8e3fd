import { appendFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import type { Client } from "pg";
import { messageOf } from "../errors.js";
import { eventLine, scrubSecrets } from "../events/log.js";
import { WATCHDOG_CHECK_MS, WATCHDOG_QUERY_MS, watchdogVerdict } from "../fleet/adopt-decide.js";
import type { LeaseLook } from "../fleet/adopt-decide.js";
import { TmuxRunner } from "../harness/tmux.js";
import { rememberSecret } from "../secrets.js";
import { insertEventLines } from "../state/postgres/event-table.js";
import { LEASES_TABLE } from "../state/postgres/leases.js";
import { parseWatchdogSpec } from "./watchdog-spec.js";
import type { WatchdogSpec } from "./watchdog-spec.js";

/**
 * A session's watchdog (docs/scale.md, "Fencing"): a small process of its own, started with the
 * session by the daemon that owns the item, in a process group and session of its own, so a
 * `kill -9` of the daemon leaves it running beside the harness. Every WATCHDOG_CHECK_MS it reads
 * the item's lease; once the lease is another daemon's, gone, or past its end (also when the
 * database cannot be reached: it fences as if the lease lapsed), it ends the harness — SIGTERM to
 * the pane's process group, SIGKILL after the grace — and the tmux session, and exits. It exits
 * too when the session's harness is no longer live (closed, or ended on its own).
 */

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function log(spec: WatchdogSpec, line: string): void {
  if (spec.logFile === undefined) return;
  try {
    appendFileSync(spec.logFile, `${new Date().toISOString()} watchdog ${process.pid} ${spec.target} (${spec.item}): ${scrubSecrets(line)}\n`);
  } catch {
    // The log is for a person reading afterwards; the fencing does not depend on it.
  }
}

class LeaseReader {
  private client: Client | undefined;

  constructor(private readonly spec: WatchdogSpec) {}

  async look(): Promise<LeaseLook> {
    try {
      const client = await this.connected();
      const { rows } = await client.query<{ owner: string; remaining: string }>(
        `SELECT owner, (EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::bigint AS remaining FROM ${LEASES_TABLE} WHERE item = $1`,
        [this.spec.item],
      );
      const row = rows[0];
      return row === undefined ? { owner: undefined } : { owner: row.owner, remainingMs: Number(row.remaining) };
    } catch (error) {
      await this.drop();
      return { failed: scrubSecrets(messageOf(error)) };
    }
  }

  /**
   * Records the fencing as session.fenced, under its daemon's name: the daemon may be dead, and
   * the event log is where a person looks first. Best effort: the harness is already ended.
   */
  async recordFenced(reason: string, signal: string): Promise<void> {
    const { item, owner, target } = this.spec;
    const line = eventLine("session.fenced", { work_item: item, daemon: owner, tmux_target: target, reason, signal }, "daemon");
    try {
      await insertEventLines(await this.connected(), owner, [line]);
    } catch (error) {
      // The database is what the fence could not reach, often: the watchdog's log keeps the line.
      log(this.spec, `could not record session.fenced: ${messageOf(error)}`);
    }
  }

  async drop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    // A broken connection's end can fail as well: the next look opens a new one.
    await client?.end().catch(() => undefined);
  }

  private async connected(): Promise<Client> {
    if (this.client !== undefined) return this.client;
    const pg = (await import("pg")).default;
    const client = new pg.Client({
      connectionString: this.spec.url,
      application_name: `the-loop watchdog ${this.spec.owner}`,
      connectionTimeoutMillis: WATCHDOG_QUERY_MS,
      query_timeout: WATCHDOG_QUERY_MS,
    });
    // An error on an idle connection: the next look finds the connection gone and opens another.
    client.on("error", () => undefined);
    await client.connect();
    this.client = client;
    return client;
  }
}

/** How often a fenced watchdog looks again for a session whose start was under way. */
const WATCHDOG_APPEAR_LOOK_MS = 200;

async function watch(spec: WatchdogSpec): Promise<void> {
  const runner = new TmuxRunner({ remainOnExit: false, ...(spec.socketName !== undefined ? { socketName: spec.socketName } : {}) });
  const reader = new LeaseReader(spec);
  let deadline = performance.now() + spec.leaseMs;
  // Started before the harness: until the session is first seen, its absence is its start under way.
  const appearBy = performance.now() + (spec.appearWithinMs ?? 0);
  let seen = false;
  /** Why the harness is to end, once a look said so: final, so the lease is not read again. */
  let ending: string | undefined;
  try {
    for (;;) {
      const live = (await runner.probe(spec.target)) === "live";
      if (live) seen = true;
      else if (seen || performance.now() > appearBy) return;
      const started = performance.now();
      const verdict = ending === undefined ? watchdogVerdict(await reader.look(), spec.owner, deadline, started, performance.now()) : { end: ending };
      if ("end" in verdict && !live) {
        // Fenced before its harness came up: it is ended as soon as it does, or the start never finishes.
        ending = verdict.end;
        await delay(WATCHDOG_APPEAR_LOOK_MS);
        continue;
      }
      if ("end" in verdict) {
        const ended = await runner.terminate(spec.target, { killHarness: true, graceMs: spec.killGraceMs, killSession: true });
        log(spec, `ended the harness (${ended.signal}) and its tmux session: ${verdict.end}`);
        await reader.recordFenced(verdict.end, ended.signal);
        return;
      }
      deadline = verdict.deadlineMs;
      await delay(Math.max(0, Math.min(WATCHDOG_CHECK_MS, deadline - performance.now())));
    }
  } finally {
    await reader.drop();
  }
}

async function main(): Promise<void> {
  const parsed = parseWatchdogSpec(await readStdin());
  if ("problem" in parsed) {
    process.stderr.write(`the-loop watchdog: ${parsed.problem}\n`);
    process.exitCode = 2;
    return;
  }
  rememberSecret(parsed.url);
  try {
    await watch(parsed);
  } catch (error) {
    log(parsed, `stopped watching: ${messageOf(error)}`);
    process.exitCode = 1;
  }
}

await main();
