/**
 * The CLI leaves through one exit point (src/cli/main.ts). Code anywhere below it reports a
 * failure by throwing an ExitError; main prints its message and sets the exit code.
 */

export const EXIT_OK = 0;
/** A runtime failure: the command was well formed but could not be carried out. */
export const EXIT_FAILURE = 1;
/** A usage or configuration error: the command or the config must change before a retry helps. */
export const EXIT_USAGE = 2;
/** A foreground command stopped by Ctrl-C (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;

export type ErrorCode = "failure" | "usage" | "config" | "not-found" | "conflict" | "lock-timeout" | "interrupted";

export class ExitError extends Error {
  override readonly name: string = "ExitError";
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
    readonly code: ErrorCode = exitCode === EXIT_USAGE ? "usage" : "failure",
    /** Further lines printed after the message (each problem of a config, for example). */
    readonly details: readonly string[] = [],
  ) {
    super(message);
  }
}

/** The command line itself is wrong: a malformed reference, a bad flag value. Exit 2. */
export class UsageError extends ExitError {
  override readonly name: string = "UsageError";
  constructor(message: string, details: readonly string[] = []) {
    super(message, EXIT_USAGE, "usage", details);
  }
}

/** Something the command names does not exist (a work item, a file). Exit 1. */
export class NotFoundError extends ExitError {
  override readonly name: string = "NotFoundError";
  constructor(message: string) {
    super(message, EXIT_FAILURE, "not-found");
  }
}

/**
 * The command has printed its whole answer (a status table, a JSON document) and only the exit
 * status is left to set: nothing more is printed, not even a JSON error.
 */
export class AnswerGivenExit extends ExitError {
  override readonly name: string = "AnswerGivenExit";
  constructor(exitCode: number = EXIT_FAILURE) {
    super("", exitCode, "failure");
  }
}

/** The message of any thrown value, for wrapping causes into our own errors. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** The errno-style code of a Node system error (ENOENT, EEXIST, …), if it has one. */
export function errnoOf(error: unknown): string | undefined {
  if (error instanceof Error && "code" in error && typeof error.code === "string") return error.code;
  return undefined;
}
