import { z } from "zod";
import { GITHUB_REPOSITORY_PATTERN, LOCAL_PROJECT_PATTERN } from "./name-patterns.js";

/** `routing.limits`: the concurrency caps and the start queue's order (docs/fleet.md; the decisions are src/routing/limits.ts). */
export const limitsSchema = z
  .strictObject({
    maxLiveSessions: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("Live sessions at once, over every work item. A start beyond it is queued (FIFO) until a session closes. Unset: no cap."),
    perDaemon: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "Live sessions this daemon runs at once: its own capacity, which may differ per host. On a database several daemons share (docs/scale.md), a start beyond it is queued for a daemon with room to take; with one daemon it is one more cap like maxLiveSessions. Unset: no cap.",
      ),
    perHarness: z
      .record(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/), z.number().int().min(1))
      .default({})
      .describe("A harness → how many of its sessions may be live at once; a start beyond it is queued. A harness not named has no cap of its own."),
    perRepository: z
      .record(
        z.string().regex(new RegExp(`${GITHUB_REPOSITORY_PATTERN}|${LOCAL_PROJECT_PATTERN}`), "owner/repo, host/owner/repo, or a local project's name"),
        z.number().int().min(1),
      )
      .default({})
      .describe(
        "A repository (`owner/repo`, `host/owner/repo` on GitHub Enterprise) or a local project (its name) → how many sessions of its work items may be live at once; a start beyond it is queued. Matched without regard to case; one not named has no cap of its own.",
      ),
    perNode: z
      .record(
        z
          .string()
          .max(64)
          .regex(/^[a-z0-9][a-z0-9-]*$/, "a graph node's id or a phase: lowercase letters, digits and '-'"),
        z.number().int().min(1),
      )
      .default({})
      .describe(
        "A graph node (its id, in any graph) or a phase → how many work items' runs may be at it at once. A run whose next node is full waits at its edge (status waiting, reason node-full) and moves, oldest first, when a place frees; `graph force` moves past it. One not named has no cap.",
      ),
    priorityLabel: z
      .string()
      .min(1)
      .max(50)
      .optional()
      .describe(
        "A label that puts a queued start ahead of every start without it (FIFO among each). Read from the item's labels when its start is queued. Unset: the queue is FIFO alone.",
      ),
  })
  .prefault({})
  .describe("Concurrency caps (docs/fleet.md): an authorized start beyond one waits in a queue, in order, and starts when a slot frees.");
