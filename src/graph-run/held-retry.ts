/**
 * The daemon asking again for the login it posts as while gate answers are held (graph-gate.ts):
 * one timer, first after `firstMs`, then twice as long each time an attempt leaves answers
 * held, up to `maxMs`; back to `firstMs` once none are. Each attempt decides what it can (the
 * answers once the login is known, a refusal once the failure is permanent or a hold's bound ran
 * out). The timer does not keep a process alive, and stop() ends it.
 */

export interface HeldRetrySchedule {
  readonly firstMs: number;
  readonly maxMs: number;
}

/** Two seconds, doubling to a minute: a short GitHub outage costs seconds, a long one few requests. */
export const DEFAULT_HELD_RETRY: HeldRetrySchedule = { firstMs: 2_000, maxMs: 60_000 };

export class HeldAnswerRetry {
  private timer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private running = false;
  private again = false;
  private stopped = false;

  constructor(
    /** One attempt: whether answers are still held after it. */
    private readonly attempt: () => Promise<boolean>,
    private readonly schedule: HeldRetrySchedule,
    private readonly onError: (error: unknown) => void,
  ) {
    this.delayMs = schedule.firstMs;
  }

  /** Answers are held: an attempt is due (a timer already set stands). */
  arm(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => void this.fire(), this.delayMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    this.running = true;
    let held: boolean;
    try {
      held = await this.attempt();
    } catch (error) {
      this.onError(error);
      held = true;
    } finally {
      this.running = false;
    }
    if (held) {
      this.delayMs = Math.min(this.delayMs * 2, this.schedule.maxMs);
      this.arm();
    } else {
      this.delayMs = this.schedule.firstMs;
      if (this.again) this.arm();
    }
    this.again = false;
  }
}
