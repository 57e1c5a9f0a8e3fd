import type { SelfLogin } from "../trackers/tracker.js";

/**
 * The self-approval guard, failing closed. A gate answer counts only once the-loop knows the
 * login it posts as (the agent's comments carry it, so an answer under it may be the agent's own):
 * while the lookup fails, an answer that would otherwise count is *held*, not taken, and decided
 * when the login is known. A permanent failure (GitHub's 401 or 403) refuses it at once, and so
 * does a transient one that outlasts the hold's bound. `graph.allowSelfApproval` needs no login.
 */

export type SelfCheck =
  /** Decide the answer now, with the-loop's own login (null: none needed). */
  | { readonly kind: "take"; readonly selfLogin: string | null }
  /** Keep the answer until the login is known, at most until `until`. */
  | { readonly kind: "hold"; readonly reason: string; readonly until: string }
  /** The answer does not count: ask for it again. */
  | { readonly kind: "refuse"; readonly reasonCode: SelfCheckRefusal; readonly reason: string };

export type SelfCheckRefusal = "identity-unknown" | "identity-timeout";

/** How long an answer is held for a login that cannot be learned by default: 15 minutes. */
export const DEFAULT_HOLD_MS = 15 * 60_000;

export interface SelfCheckInput {
  readonly identity: SelfLogin;
  /** `graph.allowSelfApproval`: the-loop's own answers count, so its login does not matter. */
  readonly allowSelfApproval: boolean;
  /** When the answer was first held; undefined for one that was not. */
  readonly heldAt: string | undefined;
  readonly now: Date;
  /** The hold's bound. */
  readonly holdMs: number;
}

/** What an identity allows a gate answer that would otherwise count: take, hold or refuse. */
export function decideSelfCheck(input: SelfCheckInput): SelfCheck {
  if (input.allowSelfApproval) return { kind: "take", selfLogin: null };
  const { identity } = input;
  if (identity.kind === "known") return { kind: "take", selfLogin: identity.login };
  const unchecked = `the-loop could not learn the login it posts as, so it cannot tell this answer from one its own agent wrote (${identity.reason})`;
  if (identity.permanent) {
    return { kind: "refuse", reasonCode: "identity-unknown", reason: `${unchecked}; ${identity.fix}, then give the answer again` };
  }
  const since = input.heldAt !== undefined ? Date.parse(input.heldAt) : input.now.getTime();
  const until = (Number.isFinite(since) ? since : input.now.getTime()) + input.holdMs;
  if (input.now.getTime() >= until) {
    return {
      kind: "refuse",
      reasonCode: "identity-timeout",
      reason: `${unchecked}, and it still could not after ${duration(input.holdMs)}; give the answer again (${identity.fix})`,
    };
  }
  return { kind: "hold", reason: `${unchecked}; the answer waits until the login is known`, until: new Date(until).toISOString() };
}

function duration(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} minutes` : `${Math.round(ms / 1000)} seconds`;
}
