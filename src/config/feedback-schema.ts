import { z } from "zod";

/**
 * routing.feedback: what reaches a session from its pull requests besides comments — CI failures
 * and reviews requesting changes — for every repository, and for one (docs/github.md#ci-failures).
 */

/** A key of routing.feedback.repositories: `owner/repo`, `host/owner/repo` (GitHub Enterprise), or a local project's name. */
export const FEEDBACK_REPOSITORY_PATTERN =
  "^(?:(?:[A-Za-z0-9.-]+(?::[0-9]{1,5})?/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9._-]{1,100}|[A-Za-z0-9][A-Za-z0-9._-]{0,62})$";

/** What the-loop does with a kind of feedback on a pull request (docs/github.md#ci-failures). */
export const FEEDBACK_REACTIONS = ["deliver", "ignore"] as const;
export type FeedbackReaction = (typeof FEEDBACK_REACTIONS)[number];

const MAX_CI_LOG_TAIL_BYTES = 1024 * 1024;

const feedbackReaction = (meaning: string) => z.enum(FEEDBACK_REACTIONS).describe(meaning);
const CI_FAILED_MEANING =
  "A failed check or commit status on the head commit of a pull request linked to a live session: `deliver` it into the session (once per commit and check), or `ignore` it.";
const CHANGES_REQUESTED_MEANING = "A review requesting changes on such a pull request: `deliver` it into the session, or `ignore` it (a gate still reads it).";

/** A repository's own settings under routing.feedback.repositories: each key it sets wins over the shared one. */
export const repositoryFeedbackSchema = z
  .strictObject({
    reactions: z
      .strictObject({
        ciFailed: feedbackReaction(CI_FAILED_MEANING).optional(),
        changesRequested: feedbackReaction(CHANGES_REQUESTED_MEANING).optional(),
      })
      .prefault({})
      .describe("This repository's reactions; one left out is the shared one."),
    maxCiFixAttempts: z.number().int().min(0).max(100).optional().describe("This repository's `maxCiFixAttempts`."),
  })
  .describe("One repository's feedback settings.");

export const feedbackSchema = z
  .strictObject({
    reactions: z
      .strictObject({
        ciFailed: feedbackReaction(CI_FAILED_MEANING).default("deliver"),
        changesRequested: feedbackReaction(CHANGES_REQUESTED_MEANING).default("deliver"),
      })
      .prefault({})
      .describe("What reaches a session from its pull requests, for every repository not set otherwise under `repositories`."),
    maxCiFixAttempts: z
      .number()
      .int()
      .min(0)
      .max(100)
      .default(3)
      .describe(
        "CI failures delivered per pull request; the next one is not delivered, and a marked comment on the pull request asks a person to look (event `ci.gave_up`). 0: none is delivered.",
      ),
    ciLogTailBytes: z
      .number()
      .int()
      .min(0)
      .max(MAX_CI_LOG_TAIL_BYTES)
      .default(16_384)
      .describe("Bytes of the end of a failed job's log put into the message (after control sequences are stripped). 0: no log."),
    repositories: z
      .record(z.string().regex(new RegExp(FEEDBACK_REPOSITORY_PATTERN), "owner/repo, host/owner/repo, or a local project name"), repositoryFeedbackSchema)
      .default({})
      .describe("Settings of one repository (`owner/repo`, `host/owner/repo` on GitHub Enterprise, a local project's name), over the shared ones."),
  })
  .describe("Feedback from a session's pull requests: CI failures and reviews requesting changes (docs/github.md#ci-failures).");

export type FeedbackConfig = z.output<typeof feedbackSchema>;
