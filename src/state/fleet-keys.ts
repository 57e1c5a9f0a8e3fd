import { z } from "zod";

/**
 * The `state` block's keys for daemons that share one database (`store: postgres`,
 * docs/scale.md, "Many daemons, one database"): each daemon's name, and the bounds of the leases
 * by which one daemon at a time owns a work item. config/state-schema.ts takes them in; the file
 * store reads none of them.
 */
export const FLEET_STATE_KEYS = {
  daemonName: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "a name of letters, digits, '.', '_' and '-' (at most 63)")
    .optional()
    .describe(
      "This daemon's name among the daemons that share `store: postgres` (default: the host's name). Two running daemons with one name are refused; `sessions list` and `status` show where each session runs by it.",
    ),
  leaseSeconds: z
    .number()
    .int()
    .min(3)
    .max(3600)
    .default(30)
    .describe(
      "With `store: postgres`: how long a daemon's lease on a work item lasts without a heartbeat. A daemon that stops beating loses its items this long after its last beat; until then no other daemon runs them.",
    ),
  heartbeatSeconds: z
    .number()
    .int()
    .min(1)
    .max(1200)
    .default(10)
    .describe("With `store: postgres`: how often a daemon renews its leases and its name; at most a third of `leaseSeconds`, so one late beat loses nothing."),
  adoptGraceSeconds: z
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(15)
    .describe(
      "With `store: postgres`: how long past a lapsed lease another daemon waits before it adopts the item's session. Longer than a session watchdog's reaction time (2 s + 2 s + `routing.tmux.harnessKillGraceSeconds` + 2 s), so the old harness has surely ended; a start refuses a shorter one.",
    ),
  forwardWaitSeconds: z
    .number()
    .int()
    .min(1)
    .max(600)
    .default(30)
    .describe(
      "With `store: postgres`: how long a command given for an item another daemon owns (`sessions start|stop|pause|resume|close`, an agent's `graph complete`) waits for that daemon to take it — a command nobody took by then is withdrawn and never runs — and, once taken, as long again for its answer.",
    ),
};
