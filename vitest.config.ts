import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // After every test, nothing it started may still run (test/support/leak-guard.ts).
    setupFiles: ["test/support/leak-guard.ts"],
    // The leak guard tells the processes of one test file from another's by the worker's pid.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    restoreMocks: true,
  },
});
