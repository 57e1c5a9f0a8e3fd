import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import {
  answerVerdict,
  claimVerdict,
  forceVerdict,
  graphAnswerParams,
  graphCompleteParams,
  graphForceParams,
  servedRefsOf,
  unservedReason,
} from "../../src/daemon/socket/methods.js";
import type { Caller } from "../../src/daemon/socket/methods.js";
import { checkSessionCredential, credentialHash, issueCredential } from "../../src/sessions/credential.js";
import { boundedName } from "../../src/sessions/names.js";
import type { SessionRecord } from "../../src/registry/record.js";

const session: Caller = { kind: "session", session: { ref: "local:demo#1", harness: "claude" } };
const operator: Caller = { kind: "operator", id: "alice" };

describe("who may call a socket method", () => {
  it.each([
    [session, "local:demo#1", { ok: true, actor: { kind: "agent", id: "claude" } }],
    [session, "local:demo#2", { ok: false, reason: expect.stringMatching(/own work item only: this session's is local:demo#1, the claim names local:demo#2/) }],
    [operator, "local:demo#2", { ok: true, actor: { kind: "operator", id: "alice" } }],
  ] as const)("a claim by %o for %s", (caller, ref, verdict) => {
    expect(claimVerdict(caller, ref)).toEqual(verdict);
  });

  it("refuses a force to a session and gives it to the operator", () => {
    expect(forceVerdict(session)).toEqual({ ok: false, reason: expect.stringMatching(/operator command/) });
    expect(forceVerdict(operator)).toEqual({ ok: true, actor: { kind: "operator", id: "alice" } });
  });

  it("refuses a gate answer to a session and gives it to the operator", () => {
    expect(answerVerdict(session)).toEqual({ ok: false, reason: expect.stringMatching(/operator commands.*does not answer its own gate/) });
    expect(answerVerdict(operator)).toEqual({ ok: true, actor: { kind: "operator", id: "alice" } });
  });

  it.each([
    [{ ref: "#1", decision: "approved" }, true],
    [{ ref: "#1", decision: "changes-requested", reason: "fix it" }, true],
    [{ ref: "#1", decision: "approved", reason: null }, true],
    [{ ref: "#1", decision: "maybe" }, false],
    [{ ref: "#1", decision: "approved", actor: "alice" }, false],
  ] as const)("graph.answer's params %o parse: %s", (params, ok) => {
    expect(graphAnswerParams.safeParse(params).success).toBe(ok);
  });

  it("takes no actor from a message: a params object naming one is refused", () => {
    expect(graphCompleteParams.safeParse({ ref: "#1", node: null, configFile: null, actor: "alice" }).success).toBe(false);
    expect(graphForceParams.safeParse({ ref: "#1", to: "write", reason: "r", actor: "alice" }).success).toBe(false);
    expect(graphCompleteParams.safeParse({ ref: "#1", node: "bad\nnode", configFile: null }).success).toBe(false);
    expect(graphForceParams.safeParse({ ref: "#1", to: "write", reason: "r" }).success).toBe(true);
  });
});

describe("the refs a config serves", () => {
  const config = configSchema.parse({
    integrations: { local: { project: "demo" } },
    polling: {
      sources: [
        { provider: "github", repos: ["Octo/Repo", "ghe.example.com/team/tool"] },
        { provider: "local", projects: ["other"] },
      ],
    },
  });
  const served = servedRefsOf(config, {});
  const none = (): boolean => false;
  it.each([
    ["local:demo#1", true],
    ["local:other#3", true],
    ["local:elsewhere#1", false],
    ["github:octo/repo#1", true],
    ["github:OCTO/REPO#1", true],
    ["github:evil/repo#1", false],
    ["github:ghe.example.com/team/tool#2", true],
    ["github:team/tool#2", false],
  ])("%s served: %s", (ref, expected) => {
    expect(unservedReason(served, ref, none) === undefined).toBe(expected);
  });

  it("serves an item it keeps a session of (a webhook brought it), and every local project when a local source names none", () => {
    expect(unservedReason(served, "github:evil/repo#1", (ref) => ref === "github:evil/repo#1")).toBeUndefined();
    const all = servedRefsOf(configSchema.parse({ polling: { sources: [{ provider: "local" }] } }), {});
    expect(unservedReason(all, "local:anything#1", none)).toBeUndefined();
    expect(unservedReason(served, "github:evil/repo#1", none)).toMatch(/not an item this daemon serves.*add its repository/);
  });
});

describe("a session's credential", () => {
  const issued = issueCredential();
  const record = (status: "active" | "paused" | "closed", sha256: string | null = issued.sha256): SessionRecord =>
    ({ status, harness: "claude", ...(sha256 !== null ? { credentialSha256: sha256 } : {}) }) as unknown as SessionRecord;

  it("is random, and only its hash is kept", () => {
    const other = issueCredential();
    expect(other.token).not.toBe(issued.token);
    expect(issued.sha256).toBe(credentialHash(issued.token));
    expect(issued.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(issued.token.length).toBeGreaterThanOrEqual(43);
  });

  it.each([
    ["the live session's own", "active", issued.token, true],
    ["a paused session's", "paused", issued.token, true],
    ["a closed session's", "closed", issued.token, false],
    ["another token", "active", issueCredential().token, false],
  ] as const)("proves %s", (_what, status, token, ok) => {
    expect(checkSessionCredential({ workItem: "#1", token }, () => undefined).ok).toBe(false);
    expect(checkSessionCredential({ workItem: "local:demo#1", token }, () => record(status)).ok).toBe(ok);
  });

  it("proves nothing for a record with no credential, one that does not parse, or a work item that is not a ref", () => {
    expect(checkSessionCredential({ workItem: "local:demo#1", token: issued.token }, () => record("active", null)).ok).toBe(false);
    const damaged = (): SessionRecord => {
      throw new Error("damaged");
    };
    expect(checkSessionCredential({ workItem: "local:demo#1", token: issued.token }, damaged).ok).toBe(false);
    expect(checkSessionCredential({ workItem: "not a ref", token: issued.token }, () => record("active")).ok).toBe(false);
    const ok = checkSessionCredential({ workItem: "local:DEMO#1", token: issued.token }, () => record("active"));
    expect(ok).toEqual({ ok: true, session: { ref: "local:demo#1", harness: "claude" } });
  });
});

describe("a name written where people read it", () => {
  it.each([
    ["alice", "alice"],
    ["alice\nforged line", "alice forged line"],
    ["a\u001b[31mred\u0007", "ared"],
    ["  spaced\t\tout  ", "spaced out"],
    ["x".repeat(500), `${"x".repeat(99)}…`],
    ["\u0000\u0001", ""],
  ])("%j becomes %j", (given, written) => {
    expect(boundedName(given)).toBe(written);
  });
});
