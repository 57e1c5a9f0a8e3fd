import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import { Poller } from "../../src/ingress/poller.js";
import type { EventHandler, HandleResult, PollSourceRuntime, SourceBatch } from "../../src/ingress/poller.js";
import type * as PollStateModule from "../../src/ingress/poll-state.js";
import type { PollState } from "../../src/ingress/poll-state.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * The poller promises that a settled change is on disk as soon as it settles, so a kill -9 never
 * hands it out again. The writes are watched here, one by one: the state module is mocked for the
 * whole file, which is why these tests stand apart from poller.test.ts.
 */

interface Write {
  readonly handled: readonly string[];
}

const io = vi.hoisted(() => ({
  writes: [] as Write[],
  /** When set, the next write waits for it (and clears it). */
  gate: undefined as Promise<void> | undefined,
}));

vi.mock("../../src/ingress/poll-state.js", async (importOriginal) => {
  const actual = await importOriginal<typeof PollStateModule>();
  return {
    ...actual,
    savePollState: async (_path: string, state: PollState): Promise<void> => {
      io.writes.push({ handled: [...(state.sources.src?.handled ?? [])] });
      const gate = io.gate;
      io.gate = undefined;
      if (gate) await gate;
    },
  };
});

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

function event(id: string): InboundEvent {
  return { deliveryId: `poll-${id}` } as InboundEvent;
}

describe("Poller: each settled change is saved when it settles", () => {
  it("writes a change that settles while the previous write is finishing, without waiting for the batch", async () => {
    // Whether the second settle lands in the instant between the last write's end and the
    // writer standing down depends on a few microtasks: every offset is tried.
    for (let offset = 0; offset < 8; offset++) {
      io.writes.length = 0;
      io.gate = undefined;
      const dir = await tempDir();
      let cursor: string | undefined;
      const source: PollSourceRuntime = {
        key: "src",
        read: (from): Promise<SourceBatch> => {
          cursor = from;
          return Promise.resolve(
            from === undefined ? { cursor: "c0", items: [] } : { cursor: "c1", items: ["a", "b", "c"].map((id) => ({ id, event: event(id) })) },
          );
        },
      };
      const b = deferred<HandleResult>();
      const c = deferred<HandleResult>();
      const handler: EventHandler = {
        handle: (inbound) => (inbound.deliveryId === "poll-a" ? Promise.resolve({ settled: true }) : inbound.deliveryId === "poll-b" ? b.promise : c.promise),
      };
      const poller = new Poller({
        sources: [source],
        stateFile: join(dir, "poll-state.json"),
        statusFile: join(dir, "poll-status.json"),
        handler,
        events: new MemoryEventSink(),
        intervalMs: 1000,
      });
      await poller.runOnce();
      expect(cursor).toBeUndefined();

      const gate = deferred<undefined>();
      io.gate = gate.promise;
      io.writes.length = 0;
      const cycle = poller.runOnce();
      await waitFor("a's write", () => (io.writes.some((write) => write.handled.includes("a")) ? true : undefined));
      gate.resolve(undefined);
      for (let i = 0; i < offset; i++) await Promise.resolve();
      b.resolve({ settled: true });
      // c is still out, so the batch is not over: b must be on disk on its own account.
      await waitFor(`b's write (offset ${offset})`, () => (io.writes.some((write) => write.handled.includes("b")) ? true : undefined), { timeoutMs: 1_000 });
      c.resolve({ settled: true });
      await cycle;
    }
  });
});
