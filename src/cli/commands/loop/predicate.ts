import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { EXIT_INTERRUPTED, EXIT_USAGE, ExitError } from "../../../errors.js";
import { redactKnownSecrets } from "../../../secrets.js";
import type { GlobalOptions } from "../../context.js";
import { displayPath } from "../../context.js";
import { stdout } from "../../output.js";

export interface LoopPredicateOptions {
  readonly cwd?: string;
  readonly raw?: boolean;
}

/**
 * Prints one JSON document, newline-terminated: on one line with `--raw` (what a script reads),
 * indented without. Either way it is the same document.
 */
export function printJson(value: unknown, raw: boolean | undefined): void {
  if (raw !== true) {
    stdout.json(value);
    return;
  }
  process.stdout.write(`${JSON.stringify(value, (_key, field: unknown) => (typeof field === "string" ? redactKnownSecrets(field) : field))}\n`);
}

/**
 * Runs `work` with a signal that SIGINT or SIGTERM aborts, so a command it started (in a process
 * group of its own) is stopped with this process instead of outliving it; an interrupted run
 * exits 130 rather than answering.
 */
export async function untilInterrupted<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const abort = (): void => controller.abort();
  process.on("SIGINT", abort);
  process.on("SIGTERM", abort);
  try {
    const answer = await work(controller.signal);
    if (controller.signal.aborted) throw new ExitError("interrupted: what it ran was stopped, and there is no answer", EXIT_INTERRUPTED, "interrupted");
    return answer;
  } finally {
    process.off("SIGINT", abort);
    process.off("SIGTERM", abort);
  }
}

/**
 * `the-loop loop predicate <json> [--cwd DIR] [--raw]`: evaluates a gate's predicate, given as
 * one argv element of JSON (never re-quoted into a shell string), in DIR. Prints
 * `{"block", "message"}` and exits 0 whenever it was evaluated — a block is an answer, not a
 * failure; exits 2 when it cannot be (bad JSON, an unknown kind, a wrong field, no such DIR).
 * A `command-exit-zero` command gets the base environment only and 10 minutes (whoever runs this
 * bounds the whole process too).
 */
export async function runLoopPredicate(globals: GlobalOptions, json: string, options: LoopPredicateOptions): Promise<void> {
  void globals;
  let predicate: unknown;
  try {
    predicate = JSON.parse(json);
  } catch (error) {
    throw new ExitError(
      `the predicate is not JSON (${(error as Error).message}); pass it as one argument, such as '{"kind":"artifact-exists","artifact":"PLAN.md"}'`,
      EXIT_USAGE,
      "usage",
    );
  }
  const cwd = resolve(options.cwd ?? ".");
  const info = await stat(cwd).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) {
    throw new ExitError(`--cwd ${displayPath(cwd)} is not a directory; give the session's working directory`, EXIT_USAGE, "usage");
  }
  const { evaluatePredicate } = await import("../../../capabilities/predicate.js");
  const { allowListedEnv } = await import("../../../subprocess/index.js");
  const verdict = await untilInterrupted((signal) => evaluatePredicate(predicate, { cwd, env: allowListedEnv([]), signal }));
  if (!verdict.ok) throw new ExitError(`the predicate cannot be evaluated: ${verdict.error}`, EXIT_USAGE, "usage");
  printJson({ block: verdict.block, message: verdict.message }, options.raw);
}
