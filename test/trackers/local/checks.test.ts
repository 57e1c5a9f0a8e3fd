import { describe, expect, it } from "vitest";
import { inboundFromChange, isNews } from "../../../src/ingress/local-source.js";
import { CHECK_LOG_MAX_BYTES, checkedLine } from "../../../src/trackers/local/item-events.js";
import type { ItemSnapshot } from "../../../src/trackers/local/records.js";
import type { TrackerChange } from "../../../src/trackers/tracker.js";
import type { WorkItem } from "../../../src/workitem/index.js";

/** A check recorded on a local item (`the-loop item check`): its journal line, and what the poller makes of it. */

const snapshot = { number: 1, id: "item-1", labels: ["x"], state: "open" } as unknown as ItemSnapshot;
const item = { ref: "local:demo#1", tracker: "local", kind: "issue", url: "", id: "item-1" } as WorkItem;

describe("a recorded check", () => {
  it.each([
    [{ name: " " }, "the check's name must be one line"],
    [{ name: "a\nb" }, "the check's name must be one line"],
    [{ name: "test", url: "javascript:alert(1)" }, "is not an http or https URL"],
    [{ name: "test", commit: "main" }, "is not a commit's hex id"],
  ])("refuses %o", (input, message) => {
    expect(() => checkedLine(2, "t", snapshot, "alice", { conclusion: "failure", ...input })).toThrow(message);
  });

  it("keeps the log's last bytes, whole characters only, and the commit in lower case", () => {
    const line = checkedLine(2, "t", snapshot, "alice", {
      name: "test",
      conclusion: "failure",
      commit: "ABC1234",
      log: `${"é".repeat(CHECK_LOG_MAX_BYTES)}end`,
    });
    if (line.kind !== "checked") throw new Error("not a check");
    expect(line.check.commit).toBe("abc1234");
    expect(Buffer.byteLength(line.check.log ?? "")).toBeLessThanOrEqual(CHECK_LOG_MAX_BYTES);
    expect(line.check.log?.endsWith("éend")).toBe(true);
    expect(line).toMatchObject({ kind: "checked", number: 1, itemId: "item-1", labels: ["x"], state: "open", actor: "alice" });
  });

  const change = (check: TrackerChange["check"]): TrackerChange => ({
    id: "demo:7",
    kind: "checked",
    item,
    actor: "alice",
    at: "t",
    labels: [],
    state: "open",
    check,
  });

  it.each([
    [{ name: "test", conclusion: "failure" as const }, true],
    [{ name: "test", conclusion: "success" as const }, false],
  ])("%o is news: %s", (check, news) => {
    expect(isNews(change(check))).toBe(news);
  });

  it("is, failed, a CI failure on the item with no actor, its log allowed, keyed by commit and name (else by the recording)", () => {
    const event = inboundFromChange(change({ name: "test", conclusion: "failure", commit: "abc1234", log: "boom", url: "http://ci.local/1" }));
    expect(event).toMatchObject({
      kind: "check_failed",
      actor: null,
      body: null,
      workItems: [item],
      pullRequest: { ref: "local:demo#1" },
      check: { source: "local", name: "test", conclusion: "failure", headSha: "abc1234", log: "boom", url: "http://ci.local/1", logAllowed: true },
      contentKey: "ci:local:demo#1@abc1234:test",
    });
    expect(inboundFromChange(change({ name: "test", conclusion: "failure" })).contentKey).toBe("ci:local:demo#1@change-demo:7:test");
  });
});
