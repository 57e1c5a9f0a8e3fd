import { promises as fs } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExitError, EXIT_FAILURE } from "../../src/errors.js";
import { MAX_HANDLED_IDS, PollStateError, loadPollState, savePollSources, savePollState } from "../../src/ingress/index.js";
import type { PollSourceState, PollState } from "../../src/ingress/index.js";
import { tempDir } from "../support/temp.js";

const sample: PollState = {
  version: 1,
  sources: {
    "local:*": {
      cursor: '{"v":1,"projects":{"demo":4}}',
      handled: ["demo:6"],
      attempts: { "demo:5": 2 },
      updatedAt: "2025-01-01T00:00:00.000Z",
    },
  },
};

describe("poll state file", () => {
  it("is empty when the file does not exist", async () => {
    expect(await loadPollState(join(await tempDir(), "missing", "poll-state.json"))).toEqual({ version: 1, sources: {} });
  });

  it("round-trips what it saves, creating the folder", async () => {
    const path = join(await tempDir(), "sessions", "poll-state.json");
    await savePollState(path, sample);
    expect(await loadPollState(path)).toEqual(sample);
    expect(JSON.parse(await fs.readFile(path, "utf8"))).toEqual(sample);
  });

  it("loads a file from before held changes were kept, and round-trips the changes held since", async () => {
    const path = join(await tempDir(), "poll-state.json");
    // What the previous version wrote: no `held` at all.
    await fs.writeFile(path, JSON.stringify(sample));
    const loaded = await loadPollState(path);
    expect(loaded).toEqual(sample);
    const held = { ...loaded.sources["local:*"]!, held: { "demo:7": "2025-01-01T00:01:00.000Z" } };
    await savePollState(path, { version: 1, sources: { "local:*": held } });
    expect((await loadPollState(path)).sources["local:*"]).toEqual(held);
    // Nothing held: nothing written, so the file reads as before.
    await savePollState(path, { version: 1, sources: { "local:*": { ...held, held: {} } } });
    expect(JSON.parse(await fs.readFile(path, "utf8"))).toEqual(sample);
  });

  it("keeps only the newest handled ids beyond the cap", async () => {
    const path = join(await tempDir(), "poll-state.json");
    const handled = Array.from({ length: MAX_HANDLED_IDS + 5 }, (_, index) => `demo:${index + 1}`);
    const source = { ...sample.sources["local:*"]!, handled };
    await savePollState(path, { version: 1, sources: { "local:*": source } });
    const loaded = await loadPollState(path);
    expect(loaded.sources["local:*"]?.handled).toHaveLength(MAX_HANDLED_IDS);
    expect(loaded.sources["local:*"]?.handled[0]).toBe("demo:6");
    // The caller's state is not trimmed behind its back.
    expect(handled).toHaveLength(MAX_HANDLED_IDS + 5);
  });

  it.each([
    ["not JSON", "{ half", "it is not JSON"],
    ["another version", JSON.stringify({ version: 2, sources: {} }), "version"],
    ["a list", "[]", "expected object"],
    [
      "a cursor that is not text",
      JSON.stringify({ version: 1, sources: { "local:*": { ...sample.sources["local:*"], cursor: 4 } } }),
      "sources.local:*.cursor",
    ],
    ["a negative attempt count", JSON.stringify({ version: 1, sources: { "local:*": { ...sample.sources["local:*"], attempts: { x: -1 } } } }), "attempts"],
  ])("refuses %s, naming the file and the remedy", async (_name, text, reason) => {
    const path = join(await tempDir(), "poll-state.json");
    await fs.writeFile(path, text);
    const error = await loadPollState(path).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PollStateError);
    expect(error).toBeInstanceOf(ExitError);
    const stateError = error as PollStateError;
    expect(stateError.exitCode).toBe(EXIT_FAILURE);
    expect(stateError.path).toBe(path);
    expect(stateError.message).toContain(`${path} is not valid poll state`);
    expect(stateError.message).toContain(reason);
    expect(stateError.message).toContain("move it aside to start from now (history is then taken as read)");
  });
});

describe("savePollSources", () => {
  it("writes only the sources named, keeping the others as stored", async () => {
    const file = join(await tempDir(), "poll-state.json");
    const entry = (cursor: string): PollSourceState => ({ cursor, handled: [], attempts: {}, updatedAt: "2026-01-01T00:00:00.000Z" });
    await savePollState(file, { version: 1, sources: { "github:mine": entry("old"), "github:theirs": entry("theirs-new") } });
    await savePollSources(file, { version: 1, sources: { "github:mine": entry("moved"), "github:theirs": entry("theirs-stale") } }, ["github:mine"]);
    expect((await loadPollState(file)).sources).toEqual({ "github:mine": entry("moved"), "github:theirs": entry("theirs-new") });
  });
});
