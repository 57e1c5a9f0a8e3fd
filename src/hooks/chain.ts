import type { EventSink } from "../events/log.js";
import { lifecyclePoint } from "../sdk/hooks/catalog.js";
import type { ContextOf, FieldKind, HookPoint, LifecyclePointName } from "../sdk/hooks/catalog.js";
import type { ChainOutcome, HookContext, HookExecutor, HookRefusal, RunOptions } from "./types.js";
import { describe, isPlainObject, sameJson } from "./values.js";

/**
 * Runs the executors declared for a point, in declaration order, and folds their answers into the
 * decisions the call site applies. The chain reads a point only through its `HookPoint` (its
 * name and its decision specs), so a new family of points needs no change here.
 *
 * A run never throws: a hook is someone else's code in the path of a dispatch, and R6.2 says
 * nothing it does may reach the caller. Every failure becomes `hooks.failed`.
 */

/** hooks.failed carries the error for a person to read, not a stack; a remote can answer at length. */
const MAX_ERROR = 500;
/** What the run reports as the failing hook when the chain itself broke, outside any executor. */
const CHAIN = "(chain)";

const NO_EVENTS: EventSink = { emit: () => undefined };

export class HookChain {
  private readonly executors: readonly HookExecutor[];

  constructor(
    executors: readonly HookExecutor[],
    private readonly events: EventSink,
  ) {
    this.executors = [...executors];
  }

  /** The chain of a process that declared no hooks: every run returns the context as given. */
  static empty(events: EventSink = NO_EVENTS): HookChain {
    return new HookChain([], events);
  }

  /** The executors' names, in declaration order. */
  get names(): readonly string[] {
    return this.executors.map((executor) => executor.name);
  }

  get size(): number {
    return this.executors.length;
  }

  /** Whether any executor runs at the point, so a call site can skip building a costly context. */
  handles(point: string): boolean {
    return this.executors.some((executor) => executor.points.has(point));
  }

  /** Runs a lifecycle point with its typed context. */
  async run<N extends LifecyclePointName>(point: N, context: ContextOf<N>, options: RunOptions = {}): Promise<ChainOutcome<ContextOf<N>>> {
    const spec = lifecyclePoint(point);
    // Only an untyped caller gets here with a name outside the catalog; nothing runs at it.
    if (spec === undefined) return { context, changed: [] };
    return (await this.runPoint(spec, context, options)) as ChainOutcome<ContextOf<N>>;
  }

  /** Runs any point: the family-independent form of `run`. Never rejects. */
  async runPoint(point: HookPoint, context: HookContext, options: RunOptions = {}): Promise<ChainOutcome> {
    let executors: readonly HookExecutor[] = [];
    try {
      executors = this.executors.filter((executor) => executor.points.has(point.name));
      // Declaring no hook for a point must cost nothing measurable: no copy, no event.
      if (executors.length === 0) return { context, changed: [] };
      return await this.fold(point, context, executors, options);
    } catch (error) {
      try {
        return this.brokenRun(point, context, executors, options, error);
      } catch {
        return { context, changed: [] };
      }
    }
  }

  /** Releases what the executors hold (remote keep-alive connections). Never rejects. */
  async close(): Promise<void> {
    await Promise.allSettled(this.executors.map(async (executor) => executor.close?.()));
  }

  private async fold(point: HookPoint, given: HookContext, executors: readonly HookExecutor[], options: RunOptions): Promise<ChainOutcome> {
    const decisions = point.decisions;
    const hasProceed = Object.hasOwn(decisions, "proceed");
    const hasReason = Object.hasOwn(decisions, "reason");
    const fixed = new Set(options.fixed ?? []);
    const current: Record<string, unknown> = { ...given };
    let refuser: string | undefined;
    let requiredRefusal: HookRefusal | undefined;

    for (const executor of executors) {
      const answer = await this.ask(executor, point, given, current, fixed);
      if (!answer.ok) {
        this.failed(point, executor, answer.error, options);
        if (executor.required && hasProceed && requiredRefusal === undefined) {
          requiredRefusal = { hook: executor.name, reason: `required hook "${executor.name}" failed: ${bounded(answer.error)}` };
          // Later executors still run, and see that the operation is already refused.
          current["proceed"] = false;
          if (hasReason) current["reason"] = requiredRefusal.reason;
        }
        continue;
      }
      const read = answer.read;
      if (read === undefined) continue;
      if (read.ignored.length > 0) {
        this.emitSafely(() => this.events.emit("hooks.ignored", withWorkItem({ point: point.name, hook: executor.name, fields: read.ignored }, options)));
      }
      if (read.changed.length === 0) continue;
      for (const field of read.changed) current[field] = read.values[field];
      if (read.changed.includes("proceed")) refuser = current["proceed"] === false ? executor.name : undefined;
      this.emitSafely(() => this.events.emit("hooks.decided", withWorkItem({ point: point.name, hook: executor.name, changed: read.changed }, options)));
    }

    if (requiredRefusal !== undefined) {
      current["proceed"] = false;
      if (hasReason) current["reason"] = requiredRefusal.reason;
    }
    const changed = Object.keys(decisions).filter((field) => !sameJson(current[field], given[field]));
    const outcome: ChainOutcome = { context: current, changed };
    if (requiredRefusal !== undefined) return { ...outcome, refusal: requiredRefusal };
    // A proceed the call site itself gave as false is its own business, not a hook's refusal.
    if (hasProceed && current["proceed"] === false && refuser !== undefined) {
      const reason = typeof current["reason"] === "string" && current["reason"] !== "" ? current["reason"] : `hook "${refuser}" refused`;
      return { ...outcome, refusal: { hook: refuser, reason } };
    }
    return outcome;
  }

  /** One executor's answer: a fresh copy in, so a hook that mutates without returning changes nothing. */
  private async ask(
    executor: HookExecutor,
    point: HookPoint,
    given: HookContext,
    current: HookContext,
    fixed: ReadonlySet<string>,
  ): Promise<{ ok: true; read: ReadAnswer | undefined } | { ok: false; error: string }> {
    let value: unknown;
    try {
      value = await executor.invoke(point, structuredClone(current));
    } catch (error) {
      return { ok: false, error: describeError(error) };
    }
    if (value === undefined || value === null) return { ok: true, read: undefined };
    if (!isPlainObject(value)) return { ok: false, error: `answered ${describe(value)}, not a context` };
    try {
      const read = readAnswer(point, given, current, value, fixed);
      return typeof read === "string" ? { ok: false, error: read } : { ok: true, read };
    } catch (error) {
      // An answer no JSON could carry (a cycle in a fact): the hook's fault, not the chain's.
      return { ok: false, error: `answered a context that cannot be read: ${describeError(error)}` };
    }
  }

  private failed(point: HookPoint, executor: HookExecutor, error: string, options: RunOptions): void {
    this.emitSafely(() =>
      this.events.emit(
        "hooks.failed",
        withWorkItem({ point: point.name, hook: executor.name, error: bounded(error), required: executor.required }, options),
      ),
    );
  }

  /**
   * The chain itself broke (a bug here, not in a hook). The run still returns: the context as
   * given, unless a required hook was to decide a proceed, which it now cannot — fail closed.
   */
  private brokenRun(point: HookPoint, given: HookContext, executors: readonly HookExecutor[], options: RunOptions, error: unknown): ChainOutcome {
    const message = bounded(describeError(error));
    this.emitSafely(() => this.events.emit("hooks.failed", withWorkItem({ point: point.name, hook: CHAIN, error: message, required: false }, options)));
    const required = executors.find((executor) => executor.required);
    if (required === undefined || !Object.hasOwn(point.decisions, "proceed")) return { context: given, changed: [] };
    const refusal = { hook: required.name, reason: `required hook "${required.name}" failed: ${message}` };
    const context: Record<string, unknown> = { ...given, proceed: false };
    if (Object.hasOwn(point.decisions, "reason")) context["reason"] = refusal.reason;
    const changed = Object.keys(point.decisions).filter((field) => !sameJson(context[field], given[field]));
    return { context, changed, refusal };
  }

  private emitSafely(emit: () => void): void {
    try {
      emit();
    } catch {
      // A sink that throws must not turn a hook's record into the-loop's failure (R6.2).
    }
  }
}

interface ReadAnswer {
  /** Decisions whose value differs from the current context, in the point's declared order. */
  readonly changed: string[];
  readonly values: Record<string, unknown>;
  /** Changed facts, unknown keys and fixed decisions the answer tried to change. */
  readonly ignored: string[];
}

/**
 * What an answer changes, or why it is the executor's failure. A wrong-typed decision fails the
 * whole answer — even when that decision is fixed — so no part of a broken answer is applied.
 * A key set to undefined is an absent key, as it would be once serialized.
 */
function readAnswer(
  point: HookPoint,
  given: HookContext,
  current: HookContext,
  answer: Record<string, unknown>,
  fixed: ReadonlySet<string>,
): ReadAnswer | string {
  const present = Object.keys(answer).filter((key) => answer[key] !== undefined);
  for (const key of present) {
    const spec = Object.hasOwn(point.decisions, key) ? point.decisions[key] : undefined;
    if (spec !== undefined && !hasKind(answer[key], spec.kind)) {
      return `decision "${key}" must be ${article(spec.kind)}, not ${describe(answer[key])}`;
    }
  }
  const values: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const key of present) {
    const value = answer[key];
    if (Object.hasOwn(point.decisions, key)) {
      if (sameJson(value, current[key])) continue;
      if (fixed.has(key)) ignored.push(key);
      // A copy: the hook may keep and later mutate what it returned.
      else values[key] = structuredClone(value);
    } else if (!Object.hasOwn(point.facts, key) || !sameJson(value, given[key])) {
      ignored.push(key);
    }
  }
  const changed = Object.keys(point.decisions).filter((key) => Object.hasOwn(values, key));
  return { changed, values, ignored };
}

function hasKind(value: unknown, kind: FieldKind): boolean {
  switch (kind) {
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
    case "integer":
      return typeof value === "number" && Number.isSafeInteger(value);
    case "string[]":
      return Array.isArray(value) && value.every((item) => typeof item === "string");
    case "work-item":
      return isPlainObject(value);
  }
}

function article(kind: FieldKind): string {
  switch (kind) {
    case "string":
      return "a string";
    case "boolean":
      return "a boolean";
    case "integer":
      return "an integer";
    case "string[]":
      return "a list of strings";
    case "work-item":
      return "a work item object";
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    // A TypeError in a hook says more with its name; our own errors are plain Error.
    return error.name !== "Error" && error.name !== "" ? `${error.name}: ${error.message}` : error.message;
  }
  return `threw ${describe(error)}${typeof error === "string" ? `: ${error}` : ""}`;
}

function bounded(text: string): string {
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text;
}

function withWorkItem<F extends object>(fields: F, options: RunOptions): F & { work_item?: string } {
  return options.workItem === undefined ? fields : { ...fields, work_item: options.workItem };
}
