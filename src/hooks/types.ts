import type { HookPoint } from "../sdk/hooks/catalog.js";

/**
 * The hook engine's seams. Nothing here knows which family a point belongs to: an executor is
 * invoked with a point and a context, the chain reads the point's decision specs back.
 */

/** A context on the wire and in the chain: field name → JSON value. */
export type HookContext = Readonly<Record<string, unknown>>;

/** Where a declared entry's code lives. */
export type HookKind = "module" | "path" | "url" | "command";

/** One loaded entry of `hooks:`, ready to be invoked. */
export interface HookExecutor {
  readonly name: string;
  readonly kind: HookKind;
  /** The points it runs at: its `on`, else every point it handles. */
  readonly points: ReadonlySet<string>;
  readonly required: boolean;
  /**
   * Runs the point. Resolves to what the executor answered — undefined or null (pass through), or
   * an object to read decisions from — and rejects on any failure (a raise, a timeout, a transport
   * or protocol error). The chain validates the answer; the executor does not.
   */
  invoke(point: HookPoint, context: HookContext): Promise<unknown>;
  /** Releases what the executor holds (keep-alive connections). */
  close?(): Promise<void>;
}

/** Why the chain refused (a `proceed: false` after the last executor). */
export interface HookRefusal {
  /** The hook whose decision (or whose failure, when required) refused. */
  readonly hook: string;
  readonly reason: string;
}

/** What a chain run leaves for the call site to apply. */
export interface ChainOutcome<C extends HookContext = HookContext> {
  /** The facts as given and the decisions after the last executor. */
  readonly context: C;
  /** Decision fields whose final value differs from what the call site gave. */
  readonly changed: readonly string[];
  /** Set when the point has `proceed` and it ended false. */
  readonly refusal?: HookRefusal;
}

export interface RunOptions {
  /** Decisions the call site reads nothing from here (a human gate's question): a change is ignored. */
  readonly fixed?: readonly string[];
  /** The work item the run is about, for the events it records. */
  readonly workItem?: string;
}

/** A `loop.*` `.pre` event's denial: the first executor that answered `denied: true` (or `deny: true`). */
export interface LoopDenial {
  readonly hook: string;
  /** Its `deny_reason`, or "" when it gave none. */
  readonly reason: string;
}

/** Labels one executor answered at an observe-only `loop.*` event: recorded, never applied. */
export interface LoopAnnotation {
  readonly hook: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** What a `loop.*` event's chain leaves for the runtime. */
export interface LoopOutcome {
  /** Set only at a `.pre` event, when a hook denied; a hook that failed never denies. */
  readonly denied?: LoopDenial;
  readonly annotations: readonly LoopAnnotation[];
}
