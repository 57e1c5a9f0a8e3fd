import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { composeRuntime } from "../../src/daemon/runtime.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { tempDir } from "../support/temp.js";

async function warningsFor(passEnv: string[], secretEnv?: string): Promise<string[]> {
  const dir = await tempDir();
  const config = configSchema.parse({
    routing: { tmux: { passEnv } },
    ...(secretEnv ? { webhooks: { ghWebhook: { secretEnv } } } : {}),
  });
  const runtime = composeRuntime({ config, paths: deriveStatePaths(config, dir), baseDir: dir, events: new MemoryEventSink() });
  const warnings: string[] = [];
  await runtime.dispatcher((message) => warnings.push(message));
  return warnings;
}

describe("routing.tmux.passEnv", () => {
  it("warns when it names the webhook secret, which is never passed", async () => {
    expect(await warningsFor(["SSH_AUTH_SOCK", "THE_LOOP_GH_WEBHOOK_SECRET"])).toEqual([
      "routing.tmux.passEnv names THE_LOOP_GH_WEBHOOK_SECRET, the webhook secret: it is never passed to a session",
    ]);
    expect(await warningsFor(["HOOK_*"], "HOOK_SECRET")).toEqual([
      "routing.tmux.passEnv names HOOK_SECRET, the webhook secret: it is never passed to a session",
    ]);
  });

  it("says nothing of names that are not the secret", async () => {
    expect(await warningsFor(["SSH_AUTH_SOCK", "AWS_*"])).toEqual([]);
  });

  it("takes names and prefixes, nothing else", () => {
    const parse = (passEnv: unknown) => configSchema.safeParse({ routing: { tmux: { passEnv } } }).success;
    expect(parse(["AWS_*", "SSH_AUTH_SOCK", "_X"])).toBe(true);
    expect(parse(["*"])).toBe(false);
    expect(parse(["A B"])).toBe(false);
    expect(parse(["A*B"])).toBe(false);
    expect(parse(["1X"])).toBe(false);
  });
});
