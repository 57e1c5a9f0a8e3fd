import { describe, expect, it } from "vitest";
import { zombieExit, zombieExitOf } from "../../src/harness/zombie-exit.js";

/** A stat line as proc(5) lays it out: 52 fields, the command name in parentheses. */
function statLine(comm: string, state: string, ppid: number, exitCode: number): string {
  const rest = Array.from({ length: 47 }, () => "0");
  return `4242 (${comm}) ${state} ${ppid} ${rest.join(" ")} ${exitCode}\n`;
}

describe("zombieExitOf", () => {
  it.each([
    ["a status", statLine("bwrap", "Z", 7, 0 << 8), { status: 0 }],
    ["a non-zero status", statLine("node", "Z", 7, 137 << 8), { status: 137 }],
    ["a signal", statLine("claude", "Z", 7, 9), { signal: 9 }],
    ["a signal with a core dump", statLine("claude", "Z", 7, 0x80 | 11), { signal: 11 }],
    ["a name with spaces and parentheses", statLine("a (b) c", "Z", 7, 3 << 8), { status: 3 }],
  ])("reads %s from a zombie of the given parent", (_case, stat, exit) => {
    expect(zombieExitOf(stat, 7)).toEqual(exit);
  });

  it.each([
    ["a running process", statLine("node", "S", 7, 0)],
    ["another parent's zombie (a reused pid)", statLine("node", "Z", 8, 0)],
    ["a line cut short", "4242 (node) Z 7 0 0"],
    ["no command name", "garbage"],
  ])("yields nothing for %s", (_case, stat) => {
    expect(zombieExitOf(stat, 7)).toBeUndefined();
  });
});

describe("zombieExit", () => {
  it("yields nothing for a pid with no stat file", async () => {
    expect(await zombieExit(1, 0, "/nonexistent-proc")).toBeUndefined();
  });
});
