import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { LocalHookEntry } from "../../src/hooks/declaration.js";
import { HookLoadError, loadHooks, loadHooksOrNone } from "../../src/hooks/load.js";
import { LocalHookError, loadLocalExecutor } from "../../src/hooks/local.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";
import { hookEvents } from "./support/fixtures.js";
import { hookRoot, writeIn } from "./support/hook-dir.js";
import { waitFor } from "../support/wait.js";

/**
 * Review findings on loading a local hook: a module whose import never finishes must fail the
 * load (R3.5, R3.6), not leave a daemon hanging before it starts — or, with nothing else keeping
 * Node's event loop alive, let the process exit silently with code 13 and no record at all.
 */

const HANGS = `import { LifecycleHooks } from "the-loop/sdk/hooks";
await new Promise(() => {});
export class Stuck extends LifecycleHooks { sessionSpawn() {} }
`;

const SLOW = `import { LifecycleHooks } from "the-loop/sdk/hooks";
await new Promise((resolve) => setTimeout(resolve, 50));
export class Slow extends LifecycleHooks { sessionSpawn() { return { prompt: "slow" }; } }
`;

describe("local executors: an import that never finishes", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fails the entry after the import timeout, saying what to fix", async () => {
    const root = await hookRoot();
    const file = await writeIn(root, "stuck.mjs", HANGS);
    const [entry] = parseHookDeclaration([{ name: "stuck", path: "stuck.mjs" }], { configDir: root, points: LIFECYCLE_POINT_NAMES });
    // The timeout is what is tested, so it runs on the fake clock; the import itself is real.
    vi.useFakeTimers();
    let settled = false;
    const loading = loadLocalExecutor(entry as LocalHookEntry, { points: LIFECYCLE_POINTS, configDir: root, importTimeoutMs: 200 })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      )
      .finally(() => (settled = true));
    await waitFor("the import's timer", () => vi.getTimerCount() > 0);
    await vi.advanceTimersByTimeAsync(199);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await loading;
    expect(error).toBeInstanceOf(LocalHookError);
    expect((error as Error).message).toBe(
      `importing ${file} did not finish within 0.2 s; a hook module must not wait at load on something that may never answer (a top-level await)`,
    );
  });

  it("a daemon's load fails whole and is recorded; a one-shot command runs with no hooks", async () => {
    const root = await hookRoot();
    await writeIn(root, "stuck.mjs", HANGS);
    const raw = [{ name: "stuck", path: "stuck.mjs" }];
    const events = new MemoryEventSink();
    const error: unknown = await loadHooks({ raw, configDir: root, events, importTimeoutMs: 200 }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(HookLoadError);
    expect((error as HookLoadError).hook).toBe("stuck");
    expect(hookEvents(events).map(([type]) => type)).toEqual(["hooks.load_failed"]);

    const again = await writeIn(root, "again/stuck.mjs", HANGS);
    const result = await loadHooksOrNone({ raw: [{ name: "stuck", path: again }], configDir: root, events: new MemoryEventSink(), importTimeoutMs: 200 });
    expect(result.chain.size).toBe(0);
    expect(result.error).toMatch(/^hooks\[0\] "stuck": importing .* did not finish within 0\.2 s/);
  });

  it("an import that waits a little, within the timeout, loads", async () => {
    const root = await hookRoot();
    await writeIn(root, "slow.mjs", SLOW);
    const chain = await loadHooks({ raw: [{ name: "slow", path: "slow.mjs" }], configDir: root, events: new MemoryEventSink(), importTimeoutMs: 5_000 });
    expect(chain.names).toEqual(["slow"]);
  });
});
