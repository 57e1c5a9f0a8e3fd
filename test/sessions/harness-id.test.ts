import { describe, expect, it } from "vitest";
import type { EventFields, EventType } from "../../src/events/index.js";
import type { HarnessAdapter } from "../../src/harness/adapters.js";
import type { SessionRecord } from "../../src/registry/index.js";
import { learnHarnessSessionId } from "../../src/sessions/harness-id.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import { sessionRecord } from "../support/builders.js";

const ASSIGNED = "6f1c1c2e-4a8f-4f55-9f57-1f0e8a1b2c3d";
const LEARNED = "01a234da-2a72-7552-a8a9-bd6c136355a5";
const item = workItemOf(parseWorkItemRef("local:demo#1"), { kind: "issue", url: "file:///demo/1", id: "1" });

/** A registry of one record, and an event sink that keeps what it was told. */
function fixture(record: SessionRecord | undefined) {
  const held = { record };
  const emitted: { type: string; fields: Record<string, unknown> }[] = [];
  const ctx = {
    options: {
      registry: {
        async update(_ref: string, mutate: (current: SessionRecord) => SessionRecord | undefined) {
          if (held.record === undefined) return undefined;
          held.record = mutate(held.record) ?? held.record;
          return held.record;
        },
      },
      events: {
        emit<T extends EventType>(type: T, fields: EventFields<T>) {
          emitted.push({ type, fields: fields as Record<string, unknown> });
        },
      },
      sessionEnv: () => ({ CODEX_HOME: "/h" }),
    },
  } as unknown as Parameters<typeof learnHarnessSessionId>[0];
  return { ctx, held, emitted };
}

function adapter(learn?: HarnessAdapter["learnSessionId"]): HarnessAdapter {
  return {
    name: "codex",
    promptInArgv: { fresh: true, resume: true },
    fresh: () => ["codex"],
    ...(learn === undefined ? {} : { learnSessionId: learn }),
  };
}

describe("learnHarnessSessionId", () => {
  const session = sessionRecord(item, { harness: "codex", harnessSessionId: ASSIGNED });

  it("records the id the harness gave its conversation, asked with the session's folder and environment", async () => {
    const { ctx, held, emitted } = fixture(session);
    let asked: Parameters<NonNullable<HarnessAdapter["learnSessionId"]>>[0] | undefined;
    const id = await learnHarnessSessionId(
      ctx,
      adapter(async (input) => {
        asked = input;
        return LEARNED;
      }),
      session,
      "/w/a",
      new Date(0),
    );
    expect(id).toBe(LEARNED);
    expect(held.record?.harnessSessionId).toBe(LEARNED);
    expect(asked).toMatchObject({ cwd: "/w/a", startedAt: new Date(0), env: { CODEX_HOME: "/h" }, workItem: "local:demo#1" });
    expect(emitted).toEqual([]);
  });

  it.each([
    { name: "finds none", learn: async () => undefined, error: /no session file/ },
    { name: "fails", learn: async () => Promise.reject(new Error("EACCES: sessions")), error: /EACCES/ },
    { name: "names an id that could smuggle an option", learn: async () => "--dangerously-bypass", error: /not a plain id/ },
  ])("keeps the assigned id, and says so, when the harness $name", async ({ learn, error }) => {
    const { ctx, held, emitted } = fixture(session);
    expect(await learnHarnessSessionId(ctx, adapter(learn), session, "/w/a", new Date(0))).toBe(ASSIGNED);
    expect(held.record?.harnessSessionId).toBe(ASSIGNED);
    expect(emitted).toHaveLength(1);
    expect(emitted[0]?.type).toBe("session.harness_id_unknown");
    expect(String(emitted[0]?.fields.error)).toMatch(error);
  });

  it("asks nothing of a harness that takes its id up front", async () => {
    const { ctx, emitted } = fixture(session);
    expect(await learnHarnessSessionId(ctx, adapter(), session, "/w/a", new Date(0))).toBe(ASSIGNED);
    expect(emitted).toEqual([]);
  });

  it("leaves a record that is no longer this session's alone", async () => {
    const later = sessionRecord(item, { harness: "codex", createdAt: "2026-02-01T00:00:00.000Z" });
    const { ctx, held } = fixture(later);
    await learnHarnessSessionId(
      ctx,
      adapter(async () => LEARNED),
      session,
      "/w/a",
      new Date(0),
    );
    expect(held.record).toEqual(later);
  });
});
