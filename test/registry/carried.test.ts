import { describe, expect, it } from "vitest";
import { carriedFrom } from "../../src/registry/record.js";
import type { SessionRecord } from "../../src/registry/record.js";

const LINK = { ref: "github:github.com/octo/repo#2", source: "closing-reference", linkedAt: "2026-12-01T00:00:00Z" } as const;
const closed = (closeReason: string | undefined, pullRequests?: SessionRecord["pullRequests"]): SessionRecord =>
  ({ status: "closed", ...(closeReason !== undefined ? { closeReason } : {}), ...(pullRequests !== undefined ? { pullRequests } : {}) }) as SessionRecord;

describe("carriedFrom: what a new session takes over from the record it replaces", () => {
  it.each([
    ["an adopted session's linked pull requests", closed("adopted", [LINK]), { pullRequests: [LINK] }],
    ["nothing from a session closed for another reason", closed("item-closed", [LINK]), {}],
    ["nothing from an adopted session without pull requests", closed("adopted", []), {}],
    ["nothing without a previous record", undefined, {}],
  ])("%s", (_what, previous, expected) => {
    expect(carriedFrom(previous)).toEqual(expected);
  });
});
