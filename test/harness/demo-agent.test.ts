import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { TmuxRunner } from "../../src/harness/index.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

// The compiled agent, as `the-loop demo` runs it (the global setup builds dist/).
const AGENT = fileURLToPath(new URL("../../dist/demo/agent.js", import.meta.url));
const tmux = new TmuxRunner({ socketName: `loop-test-${process.pid}-${randomBytes(4).toString("hex")}`, remainOnExit: true });

afterAll(() => tmux.killServer());

async function lines(path: string): Promise<string[]> {
  return (await readFile(path, "utf8").catch(() => "")).split("\n").filter((line) => line !== "");
}

async function screenShows(target: string, text: string): Promise<void> {
  await waitFor(`"${text}" on ${target}`, async () => ((await tmux.capture(target)).includes(text) ? true : undefined));
}

it("the demo agent boots, asks one question through the-loop and acknowledges a pasted event", async () => {
  const dir = await tempDir();
  const bin = join(dir, "bin");
  const askLog = join(dir, "ask.log");
  const transcript = join(dir, "transcript.jsonl");
  // A stand-in `the-loop` first on PATH: it records its arguments one per line.
  await mkdir(bin);
  await writeFile(join(bin, "the-loop"), '#!/bin/sh\nfor arg in "$@"; do printf "%s\\n" "$arg"; done >> "$STUB_ASK_LOG"\n');
  await chmod(join(bin, "the-loop"), 0o755);

  await tmux.spawn({
    target: "loop-demo-agent",
    cwd: dir,
    argv: [process.execPath, AGENT, "Work on local:demo#1: Add a /healthz endpoint\n\nThe load balancer needs it."],
    env: {
      PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
      STUB_ASK_LOG: askLog,
      THE_LOOP_WORK_ITEM: "local:demo#1",
      THE_LOOP_DEMO_TRANSCRIPT: transcript,
    },
  });

  const asked = await waitFor("the ask", async () => ((await lines(askLog)).length >= 4 ? lines(askLog) : undefined));
  expect(asked.slice(0, 3)).toEqual(["ask", "--work-item", "local:demo#1"]);
  expect(asked[3]).toMatch(/\?$/);
  await screenShows("loop-demo-agent", "Work on local:demo#1: Add a /healthz endpoint");
  await screenShows("loop-demo-agent", "waiting for an answer");

  await tmux.pasteText("loop-demo-agent", "Yes, include the version.\nAnd keep it cheap.");
  await screenShows("loop-demo-agent", "✅ got it: Yes, include the version.");
  const entries = (await lines(transcript)).map((line) => JSON.parse(line) as unknown);
  expect(entries).toEqual([
    { type: "boot", prompt: "Work on local:demo#1: Add a /healthz endpoint\n\nThe load balancer needs it." },
    { type: "input", text: "Yes, include the version.\nAnd keep it cheap." },
  ]);

  await expect(tmux.terminate("loop-demo-agent", { killHarness: true, graceMs: 5_000, killSession: true })).resolves.toEqual({
    signal: "SIGTERM",
    keptSession: false,
  });
});
