import type {
  InputReceivedContext,
  PhaseChangedContext,
  SessionSpawnContext,
  SessionSpawnedContext,
  WaitingForInputContext,
  WorkItemCompleteContext,
  WorkItemStartContext,
} from "./catalog.js";

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

/** Whether `value` is a class extending `LifecycleHooks` (of any copy of the SDK). */
export function isLifecycleHooksClass(value: unknown): value is new (options: Record<string, unknown>) => LifecycleHooks {
  if (typeof value !== "function" || value === LifecycleHooks) return false;
  let current: unknown = Object.getPrototypeOf(value);
  while (typeof current === "function") {
    if (Object.hasOwn(current, LIFECYCLE_HOOKS_BRAND)) return true;
    current = Object.getPrototypeOf(current);
  }
  return false;
}
