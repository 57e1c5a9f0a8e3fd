import { describe, expect, it } from "vitest";
import { CONTROL_COMMANDS, DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import { controlCommentText } from "../../src/control/comment.js";
import { compileVocabulary, parseControl } from "../../src/control/keywords.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { SELF_COMMENT_MARKER, isSelfAuthored } from "../../src/workitem/marker.js";
import { policyOf, route } from "../../src/routing/router.js";
import type { WorkItem } from "../../src/workitem/index.js";

/**
 * The comment `the-loop sessions <command>` leaves on the work item: the keyword a person would
 * have typed, and the marker that keeps both ingress paths from acting on it again.
 */

const vocabulary = compileVocabulary(DEFAULT_CONTROL_KEYWORDS);
const LABEL = "the-loop: auto-execute";
const ISSUE: WorkItem = {
  ref: "local:demo#3",
  tracker: "local",
  host: "local",
  repository: "demo",
  number: 3,
  kind: "issue",
  url: "",
  id: "demo-3",
};

/** The marker's lines taken out: what a reader without the marker contract would see. */
const unmarked = (body: string): string => body.replace(SELF_COMMENT_MARKER, "");

describe("controlCommentText", () => {
  it.each(CONTROL_COMMANDS)("puts the %s keyword on its own first line, then an italic line naming the CLI and the actor", (command) => {
    const keyword = DEFAULT_CONTROL_KEYWORDS[command];
    const body = controlCommentText({ keyword, command, actor: "bob" });
    const lines = body.split("\n");
    expect(lines[0]).toBe(keyword);
    expect(lines[1]).toBe("");
    expect(lines[2]).toMatch(/^_Issued from the-loop CLI by `bob` \(`the-loop sessions \w+`\) and already applied locally;.*_$/);
    expect(lines[2]).toContain(`\`the-loop sessions ${command}\``);
  });

  it.each(CONTROL_COMMANDS)("carries the %s keyword as a whole token of that command and nothing else", (command) => {
    const body = controlCommentText({ keyword: DEFAULT_CONTROL_KEYWORDS[command], command, actor: "bob" });
    expect(parseControl(unmarked(body), vocabulary)).toEqual({ kind: "command", command });
  });

  it("carries the configured keyword, whatever it is", () => {
    const keywords = { ...DEFAULT_CONTROL_KEYWORDS, pause: "/hold-on" };
    const body = controlCommentText({ keyword: "/hold-on", command: "pause", actor: "bob" });
    expect(body.split("\n")[0]).toBe("/hold-on");
    expect(parseControl(unmarked(body), compileVocabulary(keywords))).toEqual({ kind: "command", command: "pause" });
  });

  it("writes a start's graph after its keyword, where a person would, and in the command it names", () => {
    const body = controlCommentText({ keyword: DEFAULT_CONTROL_KEYWORDS.start, command: "start", actor: "bob", graph: "adhoc" });
    const lines = body.split("\n");
    expect(lines[0]).toBe(`${DEFAULT_CONTROL_KEYWORDS.start} graph=adhoc`);
    expect(lines[2]).toContain("`the-loop sessions start --graph adhoc`");
    expect(parseControl(unmarked(body), vocabulary)).toEqual({ kind: "command", command: "start", graph: "adhoc" });
  });

  it("is marked as the-loop's own, once", () => {
    const body = controlCommentText({ keyword: DEFAULT_CONTROL_KEYWORDS.stop, command: "stop", actor: "bob" });
    expect(isSelfAuthored(body)).toBe(true);
    expect(body.split(SELF_COMMENT_MARKER)).toHaveLength(2);
    expect(body.endsWith(`${SELF_COMMENT_MARKER}\n`)).toBe(true);
  });

  it("keeps an odd actor name inside its code span, on one line", () => {
    const body = controlCommentText({ keyword: DEFAULT_CONTROL_KEYWORDS.start, command: "start", actor: "e`vil\nthe-loop:stop-execution" });
    const line = body.split("\n")[2] ?? "";
    expect(line).toContain("by `e vil the-loop:stop-execution` (");
    // The name is quoted (a code span), so it never reads as a second command.
    expect(parseControl(unmarked(body), vocabulary)).toEqual({ kind: "command", command: "start" });
    expect(controlCommentText({ keyword: "k-e-y", command: "start", actor: " ` " })).toContain("by `unknown` (");
  });

  it.each(CONTROL_COMMANDS)("is dropped as the-loop's own echo (self-echo) by the router, even under an authorized login (%s)", (command) => {
    const body = controlCommentText({ keyword: DEFAULT_CONTROL_KEYWORDS[command], command, actor: "alice" });
    const policy = policyOf({
      authorizedUsers: ["alice", "the-loop"],
      spawnOnUnmatched: "labeled",
      autoExecuteLabel: LABEL,
      control: { enabled: true, requireStartCommand: true, keywords: DEFAULT_CONTROL_KEYWORDS },
    });
    const event: InboundEvent = {
      source: "poll",
      deliveryId: `d-${command}`,
      kind: "commented",
      trackerEvent: "comment",
      workItems: [ISSUE],
      actor: "alice",
      body,
      labels: [LABEL],
      itemState: "open",
      occurredAt: "2026-11-30T00:00:00.000Z",
      excerpt: {},
    };
    const registry = { sessionFor: () => ({ status: "active" as const, recentDeliveries: [] }), controlFor: () => undefined };
    expect(route(event, policy, registry, { has: () => false })).toEqual({ action: "drop", reason: "self-echo", workItem: ISSUE });
  });
});
