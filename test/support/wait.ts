// Taken when this module loads, before any test fakes the timers: a poll keeps to the real clock
// while a test moves the fake one for the code under test (vi.useFakeTimers), so it can still
// wait for what a file, a socket or a child process does meanwhile.
const realSetTimeout = globalThis.setTimeout;
const realNow = performance.now.bind(performance);

/**
 * Waits for an outcome, never for an amount of time: polls `probe` until it returns a value
 * other than undefined or false (so a condition can be written as a boolean), failing with
 * `what` after the bound.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<Exclude<T, false>> {
  const deadline = realNow() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value as Exclude<T, false>;
    if (realNow() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => realSetTimeout(resolve, options.intervalMs ?? 20));
  }
}
