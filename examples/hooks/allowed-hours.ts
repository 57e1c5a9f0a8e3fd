/**
 * A policy hook: work items start only within allowed hours. Outside them, the start is refused
 * with a reason naming the hours, the item is disarmed, and an authorized person starts it again
 * with a new start command when the hours come round (a retry at 3 a.m. is what this prevents).
 *
 *   hooks:
 *     - name: office-hours
 *       path: hooks/allowed-hours.ts
 *       with: {from: 9, to: 18, timeZone: Europe/Paris}
 */
import { LifecycleHooks } from "the-loop/sdk/hooks";
import type { WorkItemStartContext } from "the-loop/sdk/hooks";

export interface AllowedHoursOptions {
  /** The first allowed hour, 0–23 (default 9). */
  readonly from?: number;
  /** The hour the window closes, 1–24, exclusive (default 18). Less than `from`: the window spans midnight. */
  readonly to?: number;
  /** An IANA time zone the hours are read in (default UTC). */
  readonly timeZone?: string;
}

function hourOption(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`with.${name} must be a whole hour from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

const twoDigits = (hour: number): string => `${String(hour).padStart(2, "0")}:00`;

export class AllowedHours extends LifecycleHooks {
  private readonly from: number;
  private readonly to: number;
  private readonly timeZone: string;
  private readonly clock: Intl.DateTimeFormat;

  /** `now` is for tests: the-loop constructs the hook with its `with` object alone. */
  constructor(
    options: AllowedHoursOptions = {},
    private readonly now: () => Date = () => new Date(),
  ) {
    super();
    this.from = hourOption(options.from, "from", 9, 0, 23);
    this.to = hourOption(options.to, "to", 18, 1, 24);
    if (this.from === this.to % 24) throw new TypeError("with.from and with.to are the same hour: the window would be empty or the whole day");
    this.timeZone = options.timeZone ?? "UTC";
    // Throws a RangeError for an unknown zone, so a typo fails the load instead of every start.
    this.clock = new Intl.DateTimeFormat("en-GB", { timeZone: this.timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  }

  override workItemStart(context: WorkItemStartContext): WorkItemStartContext | undefined {
    // Another hook has already refused: its reason stands.
    if (!context.proceed) return undefined;
    const parts = this.clock.formatToParts(this.now());
    const hour = Number(parts.find((part) => part.type === "hour")?.value);
    const minute = parts.find((part) => part.type === "minute")?.value ?? "00";
    if (this.allows(hour)) return undefined;
    return {
      ...context,
      proceed: false,
      reason: `work items start only between ${twoDigits(this.from)} and ${twoDigits(this.to)} (${this.timeZone}); it is ${String(hour).padStart(2, "0")}:${minute} there now. Start it again within those hours.`,
    };
  }

  private allows(hour: number): boolean {
    return this.from < this.to ? hour >= this.from && hour < this.to : hour >= this.from || hour < this.to;
  }
}
