import type { EventSink } from "../events/log.js";
import { lifecyclePoint } from "../sdk/hooks/catalog.js";
import { redactKnownSecrets } from "../secrets.js";
import type { ContextOf, HookPoint, LifecyclePointName } from "../sdk/hooks/catalog.js";
import { kindInWords, ofSpec } from "./kinds.js";
import { loopPoint } from "../sdk/hooks/loop-catalog.js";
import type { LoopPayloadOf, LoopPoint, LoopPointName } from "../sdk/hooks/loop-catalog.js";
import { readLoopAnswer } from "./loop-answer.js";
import type { LoopAnswer } from "./loop-answer.js";
import type { ChainOutcome, HookContext, HookExecutor, HookRefusal, LoopAnnotation, LoopOutcome, RunOptions } from "./types.js";
import { describe, isPlainObject, sameJson } from "./values.js";
import { HookRunRecorder } from "./runs.js";
import type { HookCall, HookRunRecorderOptions } from "./runs.js";

/**
 * Runs the executors declared for a point, in declaration order, and folds their answers into the
 * decisions the call site applies. The chain reads a point only through its `HookPoint` (its
 * name and its decision specs), so a new family of points needs no change here.
 *
 * A run never throws: a hook is someone else's code in the path of a dispatch, and docs/hooks.md#when-a-hook-fails says
 * nothing it does may reach the caller. Every failure becomes `hooks.failed`, and every call —
 * whatever its outcome — a `hooks.ran` record, bounded for a busy hook (runs.ts).
 */

/** hooks.failed carries the error for a person to read, not a stack; a remote can answer at length. */
const MAX_ERROR = 500;
/** What the run reports as the failing hook when the chain itself broke, outside any executor. */
const CHAIN = "(chain)";

const NO_EVENTS: EventSink = { emit: () => undefined };

export interface HookChainOptions extends HookRunRecorderOptions {
  /**
   * Told each executor's raw answer before it is read (`the-loop hooks test` prints it). Never
   * set in the daemon; a listener that throws is ignored.
   */
  readonly onAnswer?: (hook: string, answer: unknown) => void;
}

export class HookChain {
  private readonly executors: readonly HookExecutor[];
  private readonly runs: HookRunRecorder;
  private readonly onAnswer: ((hook: string, answer: unknown) => void) | undefined;

  constructor(
    executors: readonly HookExecutor[],
    private readonly events: EventSink,
    options: HookChainOptions = {},
  ) {
    this.executors = [...executors];
    this.runs = new HookRunRecorder(events, options);
    this.onAnswer = options.onAnswer;
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

  /**
   * Runs a `loop.*` event with its payload. At a `.pre` event the first executor that denies
   * decides, and the ones after it are not called; at an observe-only event every executor runs
   * and its labels come back as annotations. A hook that fails — throws, times out, answers
   * something malformed — never denies, whatever its `required` says (the family is fail-open by
   * contract): `hooks.failed` is recorded and the next executor runs. Never rejects.
   */
  async runLoop<N extends LoopPointName>(name: N, payload: LoopPayloadOf<N>, options: RunOptions = {}): Promise<LoopOutcome> {
    const annotations: LoopAnnotation[] = [];
    try {
      const point = loopPoint(name);
      if (point === undefined) return { annotations };
      const executors = this.executors.filter((executor) => executor.points.has(name));
      const facts: HookContext = payload;
      const loopRunId = typeof facts["loop_run_id"] === "string" ? facts["loop_run_id"] : undefined;
      for (const [index, executor] of executors.entries()) {
        const started = performance.now();
        const answer = await this.askLoop(executor, point, payload);
        const call: HookCall = { hook: executor.name, point: name, durationMs: performance.now() - started, workItem: options.workItem, loopRunId };
        if (answer !== undefined && "error" in answer) {
          const error = bounded(answer.error);
          this.emitSafely(() => this.events.emit("hooks.failed", withWorkItem({ point: name, hook: executor.name, error, required: false }, options)));
          this.runs.record(call, answer.rejected ? "rejected" : "failed", { error });
          continue;
        }
        if (answer === undefined) {
          this.runs.record(call, "applied");
          continue;
        }
        if (answer.ignored.length > 0) {
          this.emitSafely(() => this.events.emit("hooks.ignored", withWorkItem({ point: name, hook: executor.name, fields: [...answer.ignored] }, options)));
        }
        if (answer.denial !== undefined) {
          const changed = answer.denial.reason === "" ? ["denied"] : ["denied", "deny_reason"];
          this.emitSafely(() => this.events.emit("hooks.decided", withWorkItem({ point: name, hook: executor.name, changed }, options)));
          this.runs.record(call, "denied", answer.denial.reason === "" ? undefined : { error: bounded(answer.denial.reason) });
          // The first denial decides: the hooks after it are not called, and their record says so.
          for (const later of executors.slice(index + 1)) {
            this.runs.record({ hook: later.name, point: name, durationMs: 0, workItem: options.workItem, loopRunId }, "skipped");
          }
          return { denied: { hook: executor.name, reason: answer.denial.reason }, annotations };
        }
        if (answer.labels !== undefined) {
          annotations.push({ hook: executor.name, labels: answer.labels });
          this.emitSafely(() => this.events.emit("hooks.decided", withWorkItem({ point: name, hook: executor.name, changed: ["labels"] }, options)));
        }
        this.runs.record(call, "applied", answer.labels !== undefined ? LABELS_CHANGED : undefined);
      }
      return { annotations };
    } catch (error) {
      // The chain itself broke: the run goes on undenied, as it would past a failing hook.
      this.emitSafely(() =>
        this.events.emit("hooks.failed", withWorkItem({ point: name, hook: CHAIN, error: bounded(describeError(error)), required: false }, options)),
      );
      return { annotations };
    }
  }

  /** Releases what the executors hold (remote keep-alive connections). Never rejects. */
  async close(): Promise<void> {
    this.runs.flush();
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
      const started = performance.now();
      const answer = await this.ask(executor, point, given, current, fixed);
      const call: HookCall = { hook: executor.name, point: point.name, durationMs: performance.now() - started, workItem: options.workItem };
      if (!answer.ok) {
        this.failed(point, executor, answer.error, options);
        this.runs.record(call, answer.rejected ? "rejected" : "failed", { error: bounded(answer.error) });
        if (executor.required && hasProceed && requiredRefusal === undefined) {
          requiredRefusal = { hook: executor.name, reason: `required hook "${executor.name}" failed: ${bounded(answer.error)}` };
          // Later executors still run, and see that the operation is already refused.
          current["proceed"] = false;
          if (hasReason) current["reason"] = requiredRefusal.reason;
        }
        continue;
      }
      const read = answer.read;
      if (read === undefined) {
        this.runs.record(call, "applied");
        continue;
      }
      if (read.ignored.length > 0) {
        this.emitSafely(() => this.events.emit("hooks.ignored", withWorkItem({ point: point.name, hook: executor.name, fields: read.ignored }, options)));
      }
      if (read.changed.length === 0) {
        this.runs.record(call, "applied");
        continue;
      }
      for (const field of read.changed) current[field] = read.values[field];
      if (read.changed.includes("proceed")) refuser = current["proceed"] === false ? executor.name : undefined;
      // A hook answering proceed: false with a reason of its own refuses in its own words: the
      // refusal names it, or the comment would quote its reason under an earlier hook's name. One
      // that only echoes proceed while changing something else (a prompt) has refused nothing.
      else if (read.proceed === false && current["proceed"] === false && read.changed.includes("reason")) refuser = executor.name;
      this.emitSafely(() => this.events.emit("hooks.decided", withWorkItem({ point: point.name, hook: executor.name, changed: read.changed }, options)));
      const refused = refuser === executor.name && current["proceed"] === false;
      this.runs.record(call, refused ? "denied" : "applied", { changed: read.changed });
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
  ): Promise<{ ok: true; read: ReadAnswer | undefined } | { ok: false; error: string; rejected: boolean }> {
    let value: unknown;
    try {
      value = await executor.invoke(point, structuredClone(current));
    } catch (error) {
      return { ok: false, error: describeError(error), rejected: false };
    }
    this.tell(executor, value);
    if (value === undefined || value === null) return { ok: true, read: undefined };
    try {
      // Inside the try: even asking a Proxy for its prototype can throw, and that is this hook's
      // failure, not a broken run that would drop the earlier hooks' decisions and skip the later ones.
      if (!isPlainObject(value)) return { ok: false, error: `answered ${describe(value)}, not a context`, rejected: true };
      const read = readAnswer(point, given, current, value, fixed);
      return typeof read === "string" ? { ok: false, error: read, rejected: true } : { ok: true, read };
    } catch (error) {
      // An answer no JSON could carry (a cycle in a fact, a getter that throws): the hook's fault, not the chain's.
      return { ok: false, error: `answered a context that cannot be read: ${describeError(error)}`, rejected: true };
    }
  }

  /**
   * One executor's answer at a loop event: undefined to pass, or why it failed — `rejected` when
   * it answered something the event cannot read, rather than failing to answer.
   */
  private async askLoop(
    executor: HookExecutor,
    point: LoopPoint,
    payload: HookContext,
  ): Promise<LoopAnswer | { error: string; rejected: boolean } | undefined> {
    let value: unknown;
    try {
      value = await executor.invoke(point, structuredClone(payload));
    } catch (error) {
      return { error: describeError(error), rejected: false };
    }
    this.tell(executor, value);
    if (value === undefined || value === null) return undefined;
    try {
      if (!isPlainObject(value)) return { error: `answered ${describe(value)}, not an object`, rejected: true };
      const read = readLoopAnswer(point, payload, value);
      return typeof read === "string" ? { error: read, rejected: true } : read;
    } catch (error) {
      return { error: `answered an object that cannot be read: ${describeError(error)}`, rejected: true };
    }
  }

  private failed(point: HookPoint, executor: HookExecutor, error: string, options: RunOptions): void {
    this.emitSafely(() =>
      this.events.emit("hooks.failed", withWorkItem({ point: point.name, hook: executor.name, error: bounded(error), required: executor.required }, options)),
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

  private tell(executor: HookExecutor, value: unknown): void {
    try {
      this.onAnswer?.(executor.name, value);
    } catch {
      // Listening to an answer is not part of reading it.
    }
  }

  private emitSafely(emit: () => void): void {
    try {
      emit();
    } catch {
      // A sink that throws must not turn a hook's record into the-loop's failure (docs/hooks.md#when-a-hook-fails).
    }
  }
}

interface ReadAnswer {
  /** Decisions whose value differs from the current context, in the point's declared order. */
  readonly changed: string[];
  readonly values: Record<string, unknown>;
  /** Changed facts, unknown keys and fixed decisions the answer tried to change. */
  readonly ignored: string[];
  /** The `proceed` the answer gave, changed or not (undefined when it gave none). */
  readonly proceed?: boolean;
}

/**
 * What an answer changes, or why it is the executor's failure. A wrong-typed decision fails the
 * whole answer — even when that decision is fixed — so no part of a broken answer is applied.
 * A key set to undefined is an absent key, as it would be once serialized.
 *
 * Each key is read exactly once, and a decision is applied as the value its kind was checked on:
 * a getter (or a Proxy) answering a boolean when checked and a string when applied would
 * otherwise carry a wrong type past the check (docs/hooks.md#the-chain).
 */
function readAnswer(
  point: HookPoint,
  given: HookContext,
  current: HookContext,
  answer: Record<string, unknown>,
  fixed: ReadonlySet<string>,
): ReadAnswer | string {
  const read: [string, unknown][] = [];
  for (const key of Object.keys(answer)) {
    const raw = answer[key];
    if (raw === undefined) continue;
    const spec = Object.hasOwn(point.decisions, key) ? point.decisions[key] : undefined;
    if (spec === undefined) {
      read.push([key, raw]);
      continue;
    }
    const checked = ofSpec(raw, spec);
    if (checked === undefined) return `decision "${key}" must be ${kindInWords(spec)}, not ${describe(raw)}`;
    read.push([key, checked.value]);
  }
  const values: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [key, value] of read) {
    if (Object.hasOwn(point.decisions, key)) {
      if (sameJson(value, current[key])) continue;
      if (fixed.has(key)) ignored.push(key);
      else values[key] = value;
    } else if (!Object.hasOwn(point.facts, key) || !sameJson(value, given[key])) {
      ignored.push(key);
    }
  }
  const changed = Object.keys(point.decisions).filter((key) => Object.hasOwn(values, key));
  const proceed = read.find(([key]) => key === "proceed")?.[1];
  return { changed, values, ignored, ...(typeof proceed === "boolean" && !fixed.has("proceed") ? { proceed } : {}) };
}

function describeError(error: unknown): string {
  try {
    if (error instanceof Error) {
      // A TypeError in a hook says more with its name; our own errors are plain Error.
      return error.name !== "Error" && error.name !== "" ? `${error.name}: ${error.message}` : String(error.message);
    }
    return `threw ${describe(error)}${typeof error === "string" ? `: ${error}` : ""}`;
  } catch {
    // What a hook throws can defeat every way of reading it (a Proxy, a throwing getter, a Symbol
    // for a name); it is still that hook's failure, and describing it must not become the chain's.
    return "threw a value that cannot be described";
  }
}

/** Redacted before it is cut: a secret cut in two would leave its first part for no sink to match. */
function bounded(text: string): string {
  const redacted = redactKnownSecrets(text);
  return redacted.length > MAX_ERROR ? `${redacted.slice(0, MAX_ERROR - 1)}…` : redacted;
}

const LABELS_CHANGED = { changed: ["labels"] } as const;

function withWorkItem<F extends object>(fields: F, options: RunOptions): F & { work_item?: string } {
  return options.workItem === undefined ? fields : { ...fields, work_item: options.workItem };
}
