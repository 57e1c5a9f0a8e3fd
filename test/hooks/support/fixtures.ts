import { expect } from "vitest";
import type { MemoryEventSink } from "../../../src/events/log.js";
import type { HookPoint, SessionSpawnContext, WaitingForInputContext, WorkItemEntity, WorkItemStartContext } from "../../../src/sdk/hooks/catalog.js";
import type { HookContext, HookExecutor, HookKind } from "../../../src/hooks/types.js";

/** Contexts and scripted executors for the hook engine's tests. */

export const WORK_ITEM: WorkItemEntity = {
  ref: "github:octo/repo#15",
  tracker: "github",
  host: "github.com",
  repository: "octo/repo",
  number: 15,
  kind: "issue",
  url: "https://github.com/octo/repo/issues/15",
  id: "I_kwDOAAAB",
};

export function startContext(overrides: Partial<WorkItemStartContext> = {}): WorkItemStartContext {
  return { workItem: WORK_ITEM, actor: "alice", trigger: "comment", harness: "claude", deliveryId: "d-1", proceed: true, reason: "", ...overrides };
}

export function spawnContext(overrides: Partial<SessionSpawnContext> = {}): SessionSpawnContext {
  return {
    workItem: WORK_ITEM,
    actor: "alice",
    harness: "claude",
    tmuxTarget: "the-loop-octo-repo-15",
    cwd: "/srv/checkouts/octo-repo-15",
    harnessSessionId: "h-1",
    pullRequest: "",
    deliveryId: "d-1",
    proceed: true,
    reason: "",
    prompt: "Work on #15.",
    ...overrides,
  };
}

export function waitingContext(overrides: Partial<WaitingForInputContext> = {}): WaitingForInputContext {
  return { workItem: WORK_ITEM, asker: "gate", node: "approve-design", question: "", summary: "", ...overrides };
}

/** A point of another family, with a decision of every kind: the engine knows no family. */
export const TEST_POINT: HookPoint = {
  name: "test_point",
  family: "test",
  method: "testPoint",
  description: "A point for the engine's tests.",
  fires: "In tests.",
  facts: { subject: { kind: "string", description: "What it is about." }, count: { kind: "integer", description: "A number." } },
  decisions: {
    label: { kind: "string", description: "A string decision.", applies: "-" },
    enabled: { kind: "boolean", description: "A boolean decision.", applies: "-" },
    limit: { kind: "integer", description: "An integer decision.", applies: "-" },
    tags: { kind: "string[]", description: "A list decision.", applies: "-" },
  },
};

export function testContext(): HookContext {
  return { subject: "s", count: 1, label: "", enabled: true, limit: 3, tags: [] };
}

export interface ScriptedExecutor extends HookExecutor {
  /** The contexts it was invoked with, as it received them. */
  readonly calls: { point: string; context: Record<string, unknown> }[];
}

/** An executor answering with `answer` (whatever it returns or throws), at `points`. */
export function scripted(
  name: string,
  points: readonly string[],
  answer: (context: Record<string, unknown>, point: HookPoint) => unknown,
  options: { required?: boolean; kind?: HookKind } = {},
): ScriptedExecutor {
  const calls: { point: string; context: Record<string, unknown> }[] = [];
  return {
    name,
    kind: options.kind ?? "path",
    points: new Set(points),
    required: options.required ?? false,
    calls,
    async invoke(point, context) {
      const copy = context as Record<string, unknown>;
      calls.push({ point: point.name, context: structuredClone(copy) });
      return await answer(copy, point);
    },
  };
}

/** The hooks.* events recorded, as `[type, fields]` pairs; the per-call `hooks.ran` records are read by runsOf. */
export function hookEvents(sink: MemoryEventSink): [string, Record<string, unknown>][] {
  return sink.events.filter((event) => event.type.startsWith("hooks.") && event.type !== "hooks.ran").map((event) => [event.type, event.fields]);
}

/** The `hooks.ran` records, their durations left out (they are the clock's, not the chain's). */
export function runsOf(sink: MemoryEventSink): Record<string, unknown>[] {
  return sink.events
    .filter((event) => event.type === "hooks.ran")
    .map((event) => {
      const { duration_ms: duration, ...rest } = event.fields;
      expect(Number.isInteger(duration) && (duration as number) >= 0).toBe(true);
      return rest;
    });
}

/** The message a rejected invocation failed with (it must fail, with an Error). */
export async function failureOf(invocation: Promise<unknown>): Promise<string> {
  const error: unknown = await invocation.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(Error);
  return (error as Error).message;
}
