import { afterEach, describe, expect, it } from "vitest";
import { adoptionBootNote, adoptionComment, tailLines, transcriptTail } from "../../src/adoption/tail.js";
import { TailKeeper } from "../../src/adoption/tail-keeper.js";
import { forgetKnownSecrets, rememberSecret } from "../../src/secrets.js";

afterEach(() => forgetKnownSecrets());

describe("transcriptTail", () => {
  it("keeps the last lines, without the blank ones at the end", () => {
    const text = `${Array.from({ length: 10 }, (_, index) => `line ${index + 1}`).join("\n")}\n\n   \n`;
    expect(transcriptTail(text, 3, 1_000)).toBe("line 8\nline 9\nline 10");
  });

  it("cuts to the character cap at a line's start", () => {
    expect(transcriptTail("aaaa\nbbbb\ncccc", 10, 9)).toBe("cccc");
  });

  it("redacts the process's secrets and what looks like a token", () => {
    rememberSecret("postgresql://loop:s3cret-password@db/loop");
    const tail = transcriptTail("connecting to postgresql://loop:s3cret-password@db/loop\ntoken ghp_abcdefghijklmnopqrstuvwxyz0123456789\n");
    expect(tail).not.toContain("s3cret-password");
    expect(tail).not.toContain("ghp_abcdefghijklmnopqrstuvwxyz0123456789");
    expect(tail).toContain("[redacted]");
  });

  it("counts lines", () => {
    expect([tailLines(undefined), tailLines(""), tailLines("a"), tailLines("a\nb")]).toEqual([0, 0, 1, 2]);
  });
});

describe("the adoption's texts", () => {
  it("tells the new agent it was adopted, from whom, and gives the tail", () => {
    const note = adoptionBootNote({ from: "box-a", self: "box-b", tail: "fake-harness: ready\nworking on it" });
    expect(note).toContain("This session was adopted");
    expect(note).toContain('the daemon "box-a"');
    expect(note).toContain("The last 2 lines of the previous session's terminal");
    expect(note).toContain("working on it");
    expect(adoptionBootNote({ from: "box-a", self: "box-b" })).toContain("kept no transcript");
  });

  it("says in the comment what happened", () => {
    expect(adoptionComment({ from: "box-a", self: "box-b", started: true, lines: 1 })).toContain(
      "`box-b` adopted it: a new session in a fresh workspace, told it was adopted and given the last 1 line",
    );
    expect(adoptionComment({ from: "box-a", self: "box-b", started: false, lines: 0 })).toContain("its start failed");
  });
});

describe("TailKeeper", () => {
  it("writes a session's tail only when it changed, and skips a pane it cannot read", async () => {
    const writes: [string, string][] = [];
    const panes = new Map([["loop-1", "one"]]);
    const keeper = new TailKeeper({
      tails: { write: async (item, _daemon, _target, tail) => void writes.push([item, tail]) },
      capture: async (target) => {
        const text = panes.get(target);
        if (text === undefined) throw new Error("gone");
        return text;
      },
      sessions: () => [
        { ref: "local:demo#1", target: "loop-1" },
        { ref: "local:demo#2", target: "loop-2" },
      ],
      daemon: "box-a",
      warn: () => undefined,
    });
    expect(await keeper.once()).toBe(1);
    expect(await keeper.once()).toBe(0);
    panes.set("loop-1", "one\ntwo");
    expect(await keeper.once()).toBe(1);
    expect(writes).toEqual([
      ["local:demo#1", "one"],
      ["local:demo#1", "one\ntwo"],
    ]);
  });
});
