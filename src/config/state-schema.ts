import { z } from "zod";
import { FLEET_STATE_KEYS } from "../state/fleet-keys.js";

/** The `state` block: where generated state lives, and which store keeps the records. */

/** Where records are kept: files under the state root (the default), or a shared PostgreSQL database. */
export const STATE_STORES = ["file", "postgres"] as const;
export type StateStore = (typeof STATE_STORES)[number];

export const stateSchema = z
  .strictObject({
    root: z
      .string()
      .min(1)
      .default(".the-loop")
      .describe(
        "Folder that holds everything the-loop generates: session records, control records, poll state, the event log, pidfiles, the local tracker and workspaces. Relative to the project directory.",
      ),
    store: z
      .enum(STATE_STORES)
      .default("file")
      .describe(
        "Where the records are kept: `file`, JSON files under `state.root` (the default: embedded, nothing to set up), or `postgres`, a PostgreSQL database several daemons can share (docs/scale.md).",
      ),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "a postgresql:// URL")
      .optional()
      .meta({
        "x-secret": true,
        description:
          "The database's `postgresql://` URL, for `store: postgres`. A secret, redacted everywhere; prefer `urlEnv`, which keeps it out of this file. Takes precedence over the variable when both are set.",
      }),
    urlEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name")
      .default("THE_LOOP_STATE_URL")
      .describe("Environment variable holding the database URL for `store: postgres` when `url` is unset (never the URL itself); withheld from sessions."),
    ...FLEET_STATE_KEYS,
  })
  .describe("Where generated state lives.");
