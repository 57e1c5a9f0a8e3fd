import { describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

interface ShownItem {
  comments: { author: string; body: string }[];
}

interface EventsJson {
  event: string;
  work_item?: string;
  question?: string;
  comment_posted?: boolean;
}

describe("the-loop ask", () => {
  it("posts the question on the work item, marked, and records that the session awaits an answer", async () => {
    const cwd = await tempDir();
    expect((await runCli(["item", "new", "Task", "--as", "alice"], { cwd })).code).toBe(0);
    const asked = await runCli(["ask", "Which port should it listen on?", "--work-item", "#1", "--json"], { cwd });
    expect(asked.code, asked.stderr).toBe(0);
    expect(jsonOf<{ workItem: string; posted: boolean }>(asked)).toMatchObject({ workItem: "local:default#1", posted: true });

    const item = jsonOf<ShownItem>(await runCli(["item", "show", "#1", "--json"], { cwd }));
    const question = item.comments.at(-1);
    expect(question?.author).toBe("the-loop");
    expect(question?.body).toContain("Which port should it listen on?");
    expect(question?.body).toContain(SELF_COMMENT_MARKER);

    const events = jsonOf<EventsJson[]>(await runCli(["events", "--type", "session.*", "--json"], { cwd }));
    expect(events).toEqual([
      expect.objectContaining({
        event: "session.awaiting_input",
        work_item: "local:default#1",
        question: "Which port should it listen on?",
        comment_posted: true,
      }),
    ]);
  });

  it("takes the work item from the session's environment, and says how to stop and wait", async () => {
    const cwd = await tempDir();
    await runCli(["item", "new", "Task", "--as", "alice"], { cwd });
    const asked = await runCli(["ask", "Ready?"], { cwd, env: { THE_LOOP_WORK_ITEM: "local:default#1" } });
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain("Posted your question on local:default#1. Now stop and wait");
  });

  it("refuses without a work item, with an empty question, or for a work item that does not exist", async () => {
    const cwd = await tempDir();
    const none = await runCli(["ask", "Ready?"], { cwd });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("pass --work-item REF");
    const empty = await runCli(["ask", "  ", "--work-item", "#1"], { cwd });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("the question is empty");
    const missing = await runCli(["ask", "Ready?", "--work-item", "#9"], { cwd });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("could not post the question on local:default#9");
  });
});
