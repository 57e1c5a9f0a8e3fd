import { setTimeout as delay } from "node:timers/promises";
import { messageOf } from "../errors.js";

/**
 * One of the daemon's periodic looks (at the sessions' panes, their budgets, the start queue):
 * `look` every `intervalMs` until `signal` aborts. A look that fails is reported once, as
 * `<failed>: <why>`, until one succeeds again — not at every beat.
 */
export async function lookEvery(
  intervalMs: number,
  look: () => Promise<unknown>,
  signal: AbortSignal,
  warn: (message: string) => void,
  failed: string,
): Promise<void> {
  let reported = false;
  while (!signal.aborted) {
    try {
      await delay(intervalMs, undefined, { signal });
    } catch {
      // Aborted: the daemon is stopping.
      return;
    }
    try {
      await look();
      reported = false;
    } catch (error) {
      if (!reported) warn(`${failed}: ${messageOf(error)}`);
      reported = true;
    }
  }
}
