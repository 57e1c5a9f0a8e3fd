import { z } from "zod";
import { readFileSync } from "node:fs";

/** The poller's heartbeat file, as `the-loop status` reads it (written by the poller each cycle). */
export interface PollHeartbeat {
  readonly startedAt?: string;
  readonly lastCycleAt?: string;
  readonly intervalSeconds?: number;
  readonly lastCycle?: Record<string, unknown>;
  /** On a shared database: per poll source, whether this daemon polls it, or which daemon does. */
  readonly sources?: Record<string, { readonly here: boolean; readonly by?: string | undefined; readonly since: string }>;
}

/** The file as the poller writes it; other keys are ignored, and a file of another shape reads as none. */
const heartbeatSchema = z.object({
  startedAt: z.string().optional(),
  lastCycleAt: z.string().optional(),
  intervalSeconds: z.number().optional(),
  lastCycle: z.record(z.string(), z.unknown()).optional(),
  sources: z.record(z.string(), z.object({ here: z.boolean(), by: z.string().optional(), since: z.string() })).optional(),
});

export function readHeartbeat(path: string): PollHeartbeat | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
  const heartbeat = heartbeatSchema.safeParse(value);
  return heartbeat.success ? stripAbsent(heartbeat.data) : undefined;
}

/** The keys that are there: the type's optional keys are absent, never undefined. */
function stripAbsent(heartbeat: z.infer<typeof heartbeatSchema>): PollHeartbeat {
  return Object.fromEntries(Object.entries(heartbeat).filter(([, value]) => value !== undefined));
}
