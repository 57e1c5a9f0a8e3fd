import { describe, expect, it } from "vitest";
import { COMMENTS_MAX, COMMENT_BODY_MAX, commentView, commentsDocument } from "../../src/dashboard/comments.js";
import { SCREEN_TEXT_MAX, TerminalFeeds, cleanScreenLine, screenFrame } from "../../src/dashboard/terminal.js";
import type { PaneCapture, ScreenFrame, TerminalPorts } from "../../src/dashboard/terminal.js";
import type { TrackerComment } from "../../src/trackers/tracker.js";
import { waitFor } from "../support/wait.js";

const ESC = "\u001b";

describe("a pane's line as the terminal view draws it", () => {
  it.each([
    ["plain text", "plain text"],
    [`${ESC}[31mred${ESC}[39m plain`, `${ESC}[31mred${ESC}[39m plain`],
    [`${ESC}[1;38;5;208mbold orange${ESC}[0m`, `${ESC}[1;38;5;208mbold orange${ESC}[0m`],
    [`${ESC}[38:2::255:0:0mtruecolour${ESC}[m`, `${ESC}[38:2::255:0:0mtruecolour${ESC}[m`],
    // Cursor moves, clears, mode switches, titles, hyperlinks, DCS: gone.
    [`a${ESC}[2Jb${ESC}[10;5Hc${ESC}[?1049hd`, "abcd"],
    [`${ESC}]0;a title${"\u0007"}after`, "after"],
    [`${ESC}]8;;https://example.com${ESC}\\link${ESC}]8;;${ESC}\\`, "link"],
    [`${ESC}Pq#0;2;0;0;0${ESC}\\x`, "x"],
    [`${ESC}(Bx${ESC}=y${ESC}7z`, "xyz"],
    // Control characters, C1's CSI among them; a tab is a space.
    ["a\u0007b\u0008c\u009b31md\te\u007f", "abc31md e"],
  ])("%j → %j", (line, shown) => {
    expect(cleanScreenLine(line)).toBe(shown);
  });

  it("joins at most rows lines with \\r\\n, keeping the pane's size", () => {
    expect(screenFrame({ cols: 80, rows: 3, text: "one\ntwo\nthree\n" })).toEqual({ cols: 80, rows: 3, text: "one\r\ntwo\r\nthree" });
    expect(screenFrame({ cols: 80, rows: 2, text: "one\ntwo\nthree\n" }).text).toBe("one\r\ntwo");
    expect(screenFrame({ cols: 10, rows: 2, text: "" }).text).toBe("");
  });

  it("cuts a huge screen without leaving half a sequence", () => {
    const line = `${ESC}[31m${"x".repeat(1000)}`;
    const frame = screenFrame({ cols: 1000, rows: 1000, text: `${Array.from({ length: 1000 }, () => line).join("\n")}\n` });
    expect(frame.text.length).toBeLessThanOrEqual(SCREEN_TEXT_MAX);
    expect(frame.text.endsWith(ESC)).toBe(false);
    expect(frame.text.slice(frame.text.lastIndexOf(ESC))).toMatch(/^.\[[0-9;]*m/);
  });
});

/** A pane whose screen the test sets, counting its reads. */
function fakePane(): { ports: TerminalPorts; set(text: string): void; end(): void; reads(): number } {
  let screen: PaneCapture | undefined = { cols: 20, rows: 2, text: "first\n" };
  let live = true;
  let reads = 0;
  return {
    ports: {
      capture: async () => {
        reads++;
        return screen;
      },
      live: () => live,
    },
    set: (text) => (screen = { cols: 20, rows: 2, text }),
    end: () => {
      live = false;
      screen = undefined;
    },
    reads: () => reads,
  };
}

function viewer(): { frames: ScreenFrame[]; ended: boolean; listener: { screen(frame: ScreenFrame): void; ended(): void } } {
  const seen = { frames: [] as ScreenFrame[], ended: false };
  return {
    get frames() {
      return seen.frames;
    },
    get ended() {
      return seen.ended;
    },
    listener: { screen: (frame) => seen.frames.push(frame), ended: () => (seen.ended = true) },
  };
}

describe("the terminal feeds", () => {
  it("sends the screen at once and each change, to every viewer of one pane from one poller, and stops reading when the last leaves", async () => {
    const pane = fakePane();
    const feeds = new TerminalFeeds(pane.ports, { intervalMs: 5 });
    const a = viewer();
    const stopA = feeds.watch("local:demo#1", "loop-x", a.listener);
    await waitFor("the first screen", async () => a.frames[0]);
    expect(a.frames[0]).toEqual({ cols: 20, rows: 2, text: "first" });
    const b = viewer();
    const stopB = feeds.watch("local:demo#1", "loop-x", b.listener);
    // The second viewer gets the current screen without waiting for a change.
    expect(b.frames).toEqual([{ cols: 20, rows: 2, text: "first" }]);
    expect(feeds.polling).toBe(1);
    pane.set("second\n");
    await waitFor("the change", async () => (a.frames.length === 2 && b.frames.length === 2 ? true : undefined));
    // An unchanged screen is not sent again.
    const readsThen = pane.reads();
    await waitFor("more reads", async () => (pane.reads() > readsThen + 3 ? true : undefined));
    expect(a.frames).toHaveLength(2);
    stopA?.();
    stopB?.();
    // No pane is read any more: the poller's timer is gone with its last viewer.
    expect(feeds.polling).toBe(0);
  });

  it("ends every viewer when the session is gone, and refuses a viewer past the bound", async () => {
    const pane = fakePane();
    const feeds = new TerminalFeeds(pane.ports, { intervalMs: 5, maxClients: 2 });
    const a = viewer();
    const b = viewer();
    const stopA = feeds.watch("local:demo#1", "loop-x", a.listener);
    const stopB = feeds.watch("local:demo#2", "loop-y", b.listener);
    expect(feeds.full).toBe(true);
    expect(feeds.watch("local:demo#1", "loop-x", viewer().listener)).toBeUndefined();
    pane.end();
    await waitFor("the end", async () => (a.ended && b.ended ? true : undefined));
    expect(feeds.polling).toBe(0);
    stopA?.();
    stopB?.();
    expect(feeds.full).toBe(false);
  });
});

const comment = (more: Partial<TrackerComment>): TrackerComment => ({
  id: "1",
  author: "alice",
  body: "hello",
  createdAt: "2026-12-01T10:00:00Z",
  url: "https://github.com/o/r/issues/1#issuecomment-1",
  kind: "comment",
  ...more,
});

describe("an item's comments as the page reads them", () => {
  it("strips control characters, marks the-loop's own, and keeps only web links", () => {
    expect(commentView(comment({ body: `bold ${ESC}[1mtext${ESC}[0m\r\nline\u0007 two` }))).toEqual({
      id: "1",
      author: "alice",
      createdAt: "2026-12-01T10:00:00Z",
      body: "bold text\nline two",
      fromTheLoop: false,
      url: "https://github.com/o/r/issues/1#issuecomment-1",
    });
    const own = commentView(comment({ body: "done\n\n<!-- the-loop:agent-comment -->", author: null, url: "file:///tmp/items/1.json" }));
    expect(own).toMatchObject({ fromTheLoop: true, author: "ghost", url: null });
    expect(commentView(comment({ body: "x".repeat(COMMENT_BODY_MAX + 10) })).body).toHaveLength(COMMENT_BODY_MAX);
  });

  it("is oldest first, the last 200", () => {
    const many = Array.from({ length: COMMENTS_MAX + 5 }, (_, index) =>
      comment({ id: String(index), createdAt: new Date(Date.UTC(2026, 0, 1) + index * 60_000).toISOString() }),
    ).reverse();
    const shown = commentsDocument(many).comments;
    expect(shown).toHaveLength(COMMENTS_MAX);
    expect(shown[0]?.id).toBe("5");
    expect(shown.at(-1)?.id).toBe(String(COMMENTS_MAX + 4));
  });
});
