import type { HookContext, HookExecutor } from "../../src/hooks/types.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";

/** What a scripted executor answers at a point, given the context it was handed. */
export type Handler = (context: Record<string, unknown>) => unknown;

/**
 * A hook executor in memory for the dispatcher's tests: its answer per point is a function of
 * the context, it runs at exactly the points it has an answer for, and it remembers every call.
 */
export class Scripted implements HookExecutor {
  readonly kind = "path" as const;
  readonly points: ReadonlySet<string>;
  readonly calls: { readonly point: string; readonly context: Record<string, unknown> }[] = [];

  constructor(
    readonly name: string,
    private readonly handlers: Readonly<Record<string, Handler>>,
    readonly required = false,
  ) {
    this.points = new Set(Object.keys(handlers));
  }

  async invoke(point: HookPoint, context: HookContext): Promise<unknown> {
    const copy = { ...context };
    this.calls.push({ point: point.name, context: copy });
    return this.handlers[point.name]?.(copy);
  }

  /** The contexts it was handed at `point`, in order. */
  at(point: string): Record<string, unknown>[] {
    return this.calls.filter((call) => call.point === point).map((call) => call.context);
  }
}
