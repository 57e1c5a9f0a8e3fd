import type {
  InputReceivedContext,
  PhaseChangedContext,
  SessionSpawnContext,
  SessionSpawnedContext,
  WaitingForInputContext,
  WorkItemCompleteContext,
  WorkItemStartContext,
} from "./catalog.js";
import type {
  LoopAnnotateAnswer,
  LoopDenyAnswer,
  LoopGatePostPayload,
  LoopGatePrePayload,
  LoopGenerationPostPayload,
  LoopGenerationPrePayload,
  LoopNodeTerminalPayload,
  LoopStartedPayload,
  LoopTerminalPayload,
} from "./loop-catalog.js";

/**
 * What an executor method returns: nothing (or null) to pass the context through unchanged, or
 * a context of the same point to replace it — of which the-loop reads back only the decisions.
 */
export type HookResult<C> = C | undefined | null | void;
export type HookReturn<C> = HookResult<C> | Promise<HookResult<C>>;

/**
 * Marks the base class across copies of the SDK: a hook module may import `the-loop/sdk/hooks`
 * from its own installation, and the daemon still recognizes its subclass.
 */
export const LIFECYCLE_HOOKS_BRAND: unique symbol = Symbol.for("the-loop.sdk.hooks.LifecycleHooks") as never;

/**
 * The base class of a lifecycle hook executor: one method per point of `LIFECYCLE_POINTS`, each
 * passing its context through. A subclass overrides the points it handles; a local declaration
 * runs it in the-loop's process, and `HookServer` hosts the same class for a `url` declaration.
 *
 * The constructor receives the declaration's `with` object (an empty object without one).
 */
export abstract class LifecycleHooks {
  static readonly [LIFECYCLE_HOOKS_BRAND] = true;

  /** A work item is about to start. Decisions: `proceed`, `reason`. */
  workItemStart(_context: WorkItemStartContext): HookReturn<WorkItemStartContext> {
    return undefined;
  }

  /** A new session's harness is about to be launched. Decisions: `proceed`, `reason`, `prompt`. */
  sessionSpawn(_context: SessionSpawnContext): HookReturn<SessionSpawnContext> {
    return undefined;
  }

  /** A session was launched and registered. Decisions: `announce`. */
  sessionSpawned(_context: SessionSpawnedContext): HookReturn<SessionSpawnedContext> {
    return undefined;
  }

  /** The loop is waiting on a person. Decisions: `question`, `summary`. */
  waitingForInput(_context: WaitingForInputContext): HookReturn<WaitingForInputContext> {
    return undefined;
  }

  /** A person's input reached the loop. No decisions: observation only. */
  inputReceived(_context: InputReceivedContext): HookReturn<InputReceivedContext> {
    return undefined;
  }

  /** The process graph's phase changed. Decisions: `notify`. */
  phaseChanged(_context: PhaseChangedContext): HookReturn<PhaseChangedContext> {
    return undefined;
  }

  /** The work item closed. Decisions: `announce`. */
  workItemComplete(_context: WorkItemCompleteContext): HookReturn<WorkItemCompleteContext> {
    return undefined;
  }
}

/**
 * The base class of an executor that handles the `loop.*` events, and the lifecycle points too:
 * it extends `LifecycleHooks`, so one class serves both families, declared once. Each method
 * passes; a subclass overrides the events it handles. An entry runs at a loop event only when
 * its `on` names it (an entry without `on` gets the lifecycle points only).
 *
 * The `.pre` methods may deny (`{denied: true, deny_reason}`; `deny` is accepted as the same);
 * the others may answer `{labels}`, recorded and never applied. A method that throws, or
 * answers something malformed, never denies: the run goes on (fail-open).
 */
export abstract class LoopHooks extends LifecycleHooks {
  // Its own mark too: the base whose pass-through methods a subclass is compared with, and a
  // class no declaration runs by itself.
  static override readonly [LIFECYCLE_HOOKS_BRAND] = true;

  /** A work item's graph run began. Decisions: `labels`. */
  loopStarted(_payload: LoopStartedPayload): HookReturn<LoopAnnotateAnswer> {
    return undefined;
  }

  /** A generation is about to begin; may deny. Decisions: `denied`, `deny_reason`, `deny`. */
  loopGenerationPre(_payload: LoopGenerationPrePayload): HookReturn<LoopDenyAnswer> {
    return undefined;
  }

  /** A generation began, or was denied. Decisions: `labels`. */
  loopGenerationPost(_payload: LoopGenerationPostPayload): HookReturn<LoopAnnotateAnswer> {
    return undefined;
  }

  /** A gate is about to be passed; may deny. Decisions: `denied`, `deny_reason`, `deny`. */
  loopGatePre(_payload: LoopGatePrePayload): HookReturn<LoopDenyAnswer> {
    return undefined;
  }

  /** A gate was passed, or denied. Decisions: `labels`. */
  loopGatePost(_payload: LoopGatePostPayload): HookReturn<LoopAnnotateAnswer> {
    return undefined;
  }

  /** An attempt at a node ended. Decisions: `labels`. */
  loopNodeTerminal(_payload: LoopNodeTerminalPayload): HookReturn<LoopAnnotateAnswer> {
    return undefined;
  }

  /** A work item's graph run ended. Decisions: `labels`. */
  loopTerminal(_payload: LoopTerminalPayload): HookReturn<LoopAnnotateAnswer> {
    return undefined;
  }
}

/**
 * Whether `value` is a class extending `LifecycleHooks` (of any copy of the SDK), `LoopHooks`
 * included. The base classes themselves are not: each carries the mark as its own.
 */
export function isLifecycleHooksClass(value: unknown): value is new (options: Record<string, unknown>) => LifecycleHooks {
  if (typeof value !== "function" || Object.hasOwn(value, LIFECYCLE_HOOKS_BRAND)) return false;
  let current: unknown = Object.getPrototypeOf(value);
  while (typeof current === "function") {
    if (Object.hasOwn(current, LIFECYCLE_HOOKS_BRAND)) return true;
    current = Object.getPrototypeOf(current);
  }
  return false;
}
