import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { formatWorkItemRef, parseWorkItemRef } from "../workitem/index.js";
import { isLive } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";

/**
 * A session's credential: a random token the process that starts a session's harness issues
 * (the daemon, or a CLI command running the dispatcher in-process), given to the harness as
 * THE_LOOP_SESSION_TOKEN and stored with the session only as its SHA-256. A request on the
 * daemon's socket that presents it acts for that session's work item, and only for it; each
 * start of the harness (a respawn too) issues a new one, so a token outlives neither its
 * harness nor its session.
 */

export const SESSION_TOKEN_ENV = "THE_LOOP_SESSION_TOKEN";

/** 32 random bytes, base64url: 43 characters. */
const TOKEN_BYTES = 32;

export interface IssuedCredential {
  readonly token: string;
  readonly sha256: string;
}

export function credentialHash(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

export function issueCredential(): IssuedCredential {
  const token = randomBytes(TOKEN_BYTES).toString("base64url");
  return { token, sha256: credentialHash(token) };
}

/**
 * Tokens issued with a claim, until the claiming process starts the claim's harness: the hash
 * goes on the record in the claim's own write, so the start needs no durable step of its own
 * (a process killed between the claim and the spawn leaves the record as it was before
 * credentials). Keyed by the claim's harness session id; only this process ever holds them.
 */
const issuedWithClaims = new Map<string, string>();

/** A credential for the session a claim is about to record: its hash for the record, its token kept for takeClaimedToken. */
export function issueForClaim(harnessSessionId: string): string {
  const issued = issueCredential();
  issuedWithClaims.set(harnessSessionId, issued.token);
  return issued.sha256;
}

/** The token issued with the claim that recorded `record`, once; undefined when this process did not issue it (or it was taken). */
export function takeClaimedToken(record: { readonly harnessSessionId: string; readonly credentialSha256?: string | undefined }): string | undefined {
  const token = issuedWithClaims.get(record.harnessSessionId);
  issuedWithClaims.delete(record.harnessSessionId);
  return token !== undefined && credentialMatches(token, record.credentialSha256) ? token : undefined;
}

/** Whether `token` is the one whose hash is `sha256`, compared in constant time. */
export function credentialMatches(token: string, sha256: string | undefined): boolean {
  if (sha256 === undefined) return false;
  const given = Buffer.from(credentialHash(token), "hex");
  const stored = Buffer.from(sha256, "hex");
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** The session a credential proves: its work item, and who it is (the agent the harness runs). */
export interface CredentialedSession {
  readonly ref: string;
  readonly harness: string;
}

export type SessionCheck = { readonly ok: true; readonly session: CredentialedSession } | { readonly ok: false; readonly reason: string };

/**
 * Decides a presented credential against the session record of the work item it names
 * (`read` returns it, or throws when it does not parse). A session that is not live, or has no
 * credential recorded, proves nothing.
 */
export function checkSessionCredential(
  presented: { readonly workItem: string; readonly token: string },
  read: (ref: string) => SessionRecord | undefined,
): SessionCheck {
  let ref: string;
  try {
    ref = formatWorkItemRef(parseWorkItemRef(presented.workItem));
  } catch {
    return { ok: false, reason: "the session credential names no work item (THE_LOOP_WORK_ITEM is not a ref)" };
  }
  let record: SessionRecord | undefined;
  try {
    record = read(ref);
  } catch {
    record = undefined;
  }
  const refused: SessionCheck = {
    ok: false,
    reason: `the session credential is not valid for ${ref}: no live session of it was given this credential (a credential ends with its harness; run the command inside the session, or as the operator without THE_LOOP_SESSION_TOKEN)`,
  };
  if (record === undefined || !isLive(record) || !credentialMatches(presented.token, record.credentialSha256)) return refused;
  return { ok: true, session: { ref, harness: record.harness } };
}
