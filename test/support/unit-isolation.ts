import { afterAll, vi } from "vitest";
import { forgetKnownSecrets } from "../../src/secrets.js";

/**
 * The unit project shares a worker's loaded modules between test files (vitest.config.ts,
 * `isolate: false`): what a file leaves changed in the process is undone once it ends, so the next
 * file starts as if alone. Environment variables and globals are unstubbed by vitest itself.
 */
afterAll(() => {
  vi.useRealTimers();
  forgetKnownSecrets();
});
