import type { FeedbackConfig, FeedbackReaction } from "../config/schema.js";
import type { WorkItem } from "../workitem/index.js";
import { repositoryKey } from "./limits.js";

/**
 * What reaches a session from its pull requests besides comments: CI failures and reviews that
 * request changes (routing.feedback). Pure functions over the settings, so each rule is a row of
 * a table test; the router and the CI delivery read them.
 */

/** One repository's feedback settings, its own over the shared ones. */
export interface RepositoryFeedback {
  readonly ciFailed: FeedbackReaction;
  readonly changesRequested: FeedbackReaction;
  readonly maxCiFixAttempts: number;
  readonly ciLogTailBytes: number;
}

/** The settings when none are configured (the schema's defaults). */
export const DEFAULT_FEEDBACK: RepositoryFeedback = { ciFailed: "deliver", changesRequested: "deliver", maxCiFixAttempts: 3, ciLogTailBytes: 16_384 };

/** The settings for the repository of `workItem`; keys are compared case-insensitively, as GitHub compares names. */
export function feedbackFor(config: FeedbackConfig | undefined, workItem: Pick<WorkItem, "ref">): RepositoryFeedback {
  if (config === undefined) return DEFAULT_FEEDBACK;
  // Named as routing.limits.perRepository names it: owner/repo, host/owner/repo, a local project.
  const key = repositoryKey(workItem.ref);
  let own: FeedbackConfig["repositories"][string] | undefined;
  for (const [name, settings] of Object.entries(config.repositories)) {
    if (name.toLowerCase() === key) own = settings;
  }
  return {
    ciFailed: own?.reactions.ciFailed ?? config.reactions.ciFailed,
    changesRequested: own?.reactions.changesRequested ?? config.reactions.changesRequested,
    maxCiFixAttempts: own?.maxCiFixAttempts ?? config.maxCiFixAttempts,
    ciLogTailBytes: config.ciLogTailBytes,
  };
}

// A Set, and lower case: GitHub writes conclusions in lower case; nothing else is a failure.
const FAILING_CONCLUSIONS: ReadonlySet<string> = new Set(["failure", "timed_out", "startup_failure"]);
const FAILING_STATES: ReadonlySet<string> = new Set(["failure", "error"]);

/**
 * Whether a check run's (or suite's) conclusion is a failure the agent can act on. `cancelled`
 * is not (a newer push usually cancels the run it supersedes), nor `action_required` (a person
 * has to do something on GitHub), nor `neutral`, `skipped`, `stale` or `success`.
 */
export function isFailingConclusion(conclusion: string | null | undefined): boolean {
  return typeof conclusion === "string" && FAILING_CONCLUSIONS.has(conclusion);
}

/** Whether a commit status's state is a failure: `failure` or `error` (never `pending` or `success`). */
export function isFailingStatus(state: string | null | undefined): boolean {
  return typeof state === "string" && FAILING_STATES.has(state);
}

/**
 * The one key of a failure on a pull request: its head commit and the check's name. The webhook,
 * the poller and a check suite's expansion all give one failure this key, so it reaches the
 * session once (the router's dedupe and the session record remember it as a content key).
 */
export function ciFailureKey(pullRequest: string, headSha: string, checkName: string): string {
  return `ci:${pullRequest}@${headSha.toLowerCase()}:${checkName}`;
}
