import { describe, expect, it } from "vitest";
import { RESPONSE_SCHEMAS } from "../../src/dashboard/schemas.js";
import { whyDocument } from "../../src/dashboard/why.js";
import type { WhySituation } from "../../src/why/explain.js";
import { whySettings } from "../support/builders.js";

const situation = (more: Partial<WhySituation>): WhySituation => ({
  ref: "local:demo#1",
  settings: whySettings(),
  session: { status: "active", harness: "claude-code", tmuxTarget: "loop-1", createdAt: "2026-12-01T12:00:00.000Z" },
  control: undefined,
  graph: undefined,
  events: [{ ts: "2026-12-01T12:00:00.000Z", source: "daemon", level: "info", event: "session.spawned", work_item: "local:demo#1" }],
  daemonRunning: true,
  ...more,
});

const documented = (given: WhySituation) => RESPONSE_SCHEMAS["GET /api/v1/items/{ref}/why"].parse(whyDocument(given));

describe("the dashboard's why: budget usage so far, as `the-loop why` gives it", () => {
  it.each([
    {
      name: "tokens and minutes against the limits in force",
      usage: { tokens: 12_345, minutes: 12, limits: { tokens: 100_000, minutes: 240 } },
      expected: { tokens: 12_345, unreadable: null, minutes: 12, limits: { tokens: 100_000, minutes: 240 }, text: "12,345/100,000 tok, 12/240 min" },
    },
    {
      name: "no limit set: the figures alone, the limits null",
      usage: { tokens: 800, minutes: 3, limits: {} },
      expected: { tokens: 800, unreadable: null, minutes: 3, limits: { tokens: null, minutes: null }, text: "800 tok, 3 min" },
    },
    {
      name: "tokens its agent CLI does not record: null, never 0, with the reason",
      usage: { tokens: null, unreadable: "the harness records no usage", minutes: 5, limits: { minutes: 60 } },
      expected: {
        tokens: null,
        unreadable: "the harness records no usage",
        minutes: 5,
        limits: { tokens: null, minutes: 60 },
        text: "? tok, 5/60 min (tokens: the harness records no usage)",
      },
    },
  ])("$name", ({ usage, expected }) => {
    expect(documented(situation({ usage })).usage).toEqual(expected);
  });

  it("is null without a live session, and the verdict and the timeline are why's", () => {
    const answer = documented(situation({ session: undefined }));
    expect(answer.usage).toBeNull();
    expect(answer.verdict.state).toBeTruthy();
    expect(answer.timeline).toHaveLength(1);
    expect(answer.timeline[0]?.text).toBeTruthy();
  });
});
