import { readFileSync } from "node:fs";

/** The poller's heartbeat file, as `the-loop status` reads it (written by the poller each cycle). */
export interface PollHeartbeat {
  readonly startedAt?: string;
  readonly lastCycleAt?: string;
  readonly intervalSeconds?: number;
  readonly lastCycle?: Record<string, unknown>;
}

export function readHeartbeat(path: string): PollHeartbeat | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as PollHeartbeat;
  } catch {
    return undefined;
  }
}

