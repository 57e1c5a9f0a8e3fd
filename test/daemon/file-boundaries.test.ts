import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readHeartbeat } from "../../src/daemon/heartbeat.js";
import { decodeHandedEnvironment } from "../../src/daemon/secret-env.js";
import { readWebhookListening } from "../../src/daemon/services.js";
import { tempDir } from "../support/temp.js";

/**
 * Files the daemon's processes leave for each other (the poller's heartbeat, the receiver's
 * address, the handed environment) are parsed with schemas where they are read, never cast: a
 * key the writer does not write is ignored, a file of another shape reads as none.
 */

async function fileHolding(content: unknown): Promise<string> {
  const path = join(await tempDir(), "file.json");
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

describe("the poller's heartbeat", () => {
  const written = { startedAt: "2025-01-01T00:00:00.000Z", lastCycleAt: "2025-01-01T00:01:00.000Z", intervalSeconds: 60, lastCycle: { changes: 2, errors: 0 } };

  it("reads what the poller writes, ignoring other keys", async () => {
    expect(readHeartbeat(await fileHolding({ ...written, extra: true }))).toEqual(written);
  });

  it("reads a partial heartbeat with its absent keys absent", async () => {
    const heartbeat = readHeartbeat(await fileHolding({ startedAt: "s" }));
    expect(heartbeat).toEqual({ startedAt: "s" });
    expect(Object.keys(heartbeat ?? {})).toEqual(["startedAt"]);
  });

  it.each<[string, unknown]>([
    ["a wrong-typed interval", { ...written, intervalSeconds: "60" }],
    ["a list for the last cycle", { ...written, lastCycle: [] }],
    ["a list", [written]],
    ["not JSON", "{ torn"],
  ])("reads %s as no heartbeat", async (_, content) => {
    expect(readHeartbeat(await fileHolding(content))).toBeUndefined();
  });
});

describe("the receiver's address file", () => {
  const written = { pid: 42, host: "127.0.0.1", port: 8080, path: "/webhook", verified: true, since: "2025-01-01T00:00:00.000Z" };

  it("reads what the receiver writes, ignoring other keys", async () => {
    expect(readWebhookListening(await fileHolding({ ...written, note: "x" }))).toEqual(written);
  });

  it.each<[string, unknown]>([
    ["a port that is text", { ...written, port: "8080" }],
    ["no host", { pid: 42, port: 8080, path: "/" }],
    ["null", null],
  ])("reads %s as no receiver", async (_, content) => {
    expect(readWebhookListening(await fileHolding(content))).toBeUndefined();
  });
});

describe("the handed environment", () => {
  it("ignores keys beside env", () => {
    expect(decodeHandedEnvironment(JSON.stringify({ env: { A: "1" }, version: 2 }))).toEqual({ A: "1" });
  });

  it("refuses an env that is text", () => {
    expect(() => decodeHandedEnvironment(JSON.stringify({ env: "A=1" }))).toThrow("it names no environment");
  });
});
