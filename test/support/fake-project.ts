import { fileURLToPath } from "node:url";

/**
 * The routing every throwaway project starts from (project.ts, fleet-chaos.ts): `alice`
 * authorized, the fake harness writing what it receives to `transcript`, label-alone spawning, and
 * the harness's folder bound into each session's sandbox so it can write there from any workdir.
 * Free of the test runner, so the bench's drivers use it too.
 */

export const FAKE_HARNESS = fileURLToPath(new URL("./fake-harness.mjs", import.meta.url));

export function fakeHarnessRouting(transcript: string, harnessDir: string): Record<string, unknown> {
  return {
    authorizedUsers: ["alice"],
    defaultHarness: "fake",
    harnesses: { fake: { command: [process.execPath, FAKE_HARNESS, transcript, "{prompt}"] } },
    // Label-alone spawning (R2.6): the session tests exercise the label path; control tests
    // pass their own `control` block to put the start gate back.
    control: { requireStartCommand: false },
    sandbox: { bind: [{ source: harnessDir, mode: "rw" }] },
  };
}
