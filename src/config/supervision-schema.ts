import { z } from "zod";

/** `routing.supervision`: the daemon's watch over the sessions' harnesses (docs/fleet.md#supervision). */
export const supervisionSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "Watch every active session's harness: one that exits, or whose pane dies, is noticed within seconds and started again with its conversation resumed. Off: a dead harness is started again only by the item's next event.",
      ),
    maxRestarts: z
      .number()
      .int()
      .min(0)
      .max(100)
      .default(3)
      .describe(
        "Restarts of a dead harness in a row (a harness that ran 10 minutes starts the count again); once they are spent the session is `failed` (failed to start), with its reason, a marked comment and a `status` problem. 0: the first death fails the session.",
      ),
    backoffSeconds: z
      .number()
      .min(0)
      .max(600)
      .default(2)
      .describe("The wait before the second restart in a row, doubled for each one after it (the first restart is at once), up to 5 minutes."),
  })
  .describe("Supervision of the sessions' harnesses (docs/fleet.md#supervision).");
