import { EXIT_FAILURE, ExitError, UsageError } from "../../errors.js";

/** Input the local tracker refuses (a title too long, a label with a control character…). Exit 2. */
export class LocalTrackerInputError extends UsageError {
  override readonly name: string = "LocalTrackerInputError";
}

/** A ref for another tracker handed to the local one (a `github:` ref). Exit 2. */
export class NotLocalRefError extends UsageError {
  override readonly name: string = "NotLocalRefError";
  constructor(readonly ref: string) {
    super(`${ref} is not a local work item: the local tracker only holds local:<project>#N items`);
  }
}

/**
 * A tracker file (or, on state.store: postgres, a row) that does not hold what the tracker wrote. The tracker stops rather than guess:
 * overwriting it could lose items or reuse change ids the poller has already delivered.
 */
export class CorruptTrackerFileError extends ExitError {
  override readonly name: string = "CorruptTrackerFileError";
  constructor(
    readonly path: string,
    reason: string,
    remedy = "move it aside (or repair it) before using this project again",
    what: "file" | "row" = "file",
  ) {
    super(`local tracker ${what} ${path} is damaged: ${reason}; ${remedy}`, EXIT_FAILURE);
  }
}

/** What to do about a journal line that does not read: the repair command, for this project. */
export function journalRemedy(project: string): string {
  return `run \`the-loop item repair --project ${project}\` to keep its readable lines and move the rest aside`;
}

/** A change-feed cursor the local tracker did not issue. */
export class InvalidCursorError extends ExitError {
  override readonly name: string = "InvalidCursorError";
  constructor(reason: string) {
    super(`invalid local tracker cursor: ${reason}; drop the stored cursor to start from now`, EXIT_FAILURE);
  }
}
