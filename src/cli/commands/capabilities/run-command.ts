import { constants } from "node:os";
import { dirname } from "node:path";
import { commandArgv, commandNames, findCommand, leadingWords, optionValue } from "../../../capabilities/commands.js";
import { loadCapabilities } from "../../../capabilities/load.js";
import { DEFAULT_COMMAND_TIMEOUT_MS } from "../../../capabilities/manifest.js";
import { AnswerGivenExit, EXIT_FAILURE, EXIT_INTERRUPTED, ExitError, UsageError } from "../../../errors.js";
import { redactKnownSecrets } from "../../../secrets.js";
import { allowListedEnv, runBounded } from "../../../subprocess/run.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../../../workitem/ref.js";
import { loadCommandConfig, printConfigWarnings } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import { stderr } from "../../output.js";

/**
 * `the-loop <words> …` for a command a capability declares: the one main.ts hands a line whose
 * first word is no built-in command. It runs the command's argv, the rest of the line appended,
 * from inside the bundle, and answers with the command's own output and exit status.
 */

/** A command line's output is the person's answer, so far more of it is kept than a check's. */
const OUTPUT_CAP_BYTES = 16 * 1024 * 1024;

export type CapabilityCommandOutcome =
  | { readonly ran: true }
  /** No installed command has that name: the commands that are installed, for the hint. */
  | { readonly ran: false; readonly installed: readonly string[] };

const minutes = (ms: number): string => (ms % 60_000 === 0 ? `${ms / 60_000} minute(s)` : `${ms / 1000} s`);

/**
 * The environment the command gets: the base allowlist, the directory the line was run from
 * (`THE_LOOP_WORKDIR`: the session's working directory when the daemon runs a step or a query —
 * the command itself runs inside its bundle), and what the line says of the work item and the phase.
 */
function commandEnv(rest: readonly string[], defaultLocalProject: string): Record<string, string> {
  const env: Record<string, string> = { ...allowListedEnv([]), THE_LOOP_WORKDIR: process.cwd() };
  const workItem = optionValue(rest, "--work-item");
  if (workItem !== undefined) {
    try {
      env.THE_LOOP_WORK_ITEM = formatWorkItemRef(parseRefInput(workItem, { defaultLocalProject }).ref);
    } catch (error) {
      if (error instanceof RefError) throw new UsageError(`--work-item: ${error.message}`);
      throw error;
    }
  }
  const phase = optionValue(rest, "--phase");
  if (phase !== undefined) env.THE_LOOP_PHASE = phase;
  return env;
}

/**
 * Runs the declared command `args` names, when one does. A line whose first argument is not a
 * command word is not looked up at all; one that names no installed command comes back
 * (`ran: false`) for commander to report as unknown. A changed bundle refuses (exit 2).
 */
export async function runCapabilityCommand(globals: GlobalOptions, args: readonly string[]): Promise<CapabilityCommandOutcome> {
  if (leadingWords(args).length === 0) return { ran: false, installed: [] };
  const loaded = await loadCommandConfig(globals);
  if (loaded.config.capabilities.length === 0) return { ran: false, installed: [] };
  printConfigWarnings(loaded);
  const configFile = loaded.source.path ?? undefined;
  const capabilities = await loadCapabilities(
    loaded.config,
    configFile !== undefined ? dirname(configFile) : loaded.baseDir,
    configFile !== undefined ? { configFile } : {},
  );
  const match = findCommand(capabilities, args);
  if (match === undefined) return { ran: false, installed: commandNames(capabilities) };

  const what = `"${match.command.name}" (capability ${match.capability.manifest.id})`;
  const env = commandEnv(match.rest, loaded.config.integrations.local.project);
  const timeoutMs = match.command.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  const controller = new AbortController();
  // The command runs in a process group of its own, which a terminal's Ctrl-C does not reach.
  const abort = (): void => controller.abort();
  process.on("SIGINT", abort);
  process.on("SIGTERM", abort);
  let result;
  try {
    result = await runBounded({
      argv: await commandArgv(match),
      cwd: match.capability.dir,
      env,
      timeoutMs,
      outputCapBytes: OUTPUT_CAP_BYTES,
      signal: controller.signal,
    });
  } finally {
    process.off("SIGINT", abort);
    process.off("SIGTERM", abort);
  }
  process.stdout.write(redactKnownSecrets(result.stdout));
  process.stderr.write(redactKnownSecrets(result.stderr));
  if (result.stdoutTruncated || result.stderrTruncated) {
    stderr.warn(`${what} wrote more than ${OUTPUT_CAP_BYTES / 1024 / 1024} MiB to ${result.stdoutTruncated ? "stdout" : "stderr"}; the rest was dropped`);
  }
  if (result.error !== undefined) throw new ExitError(`${what} could not start: ${result.error}`, EXIT_FAILURE);
  if (result.aborted) throw new ExitError(`interrupted: ${what} was stopped`, EXIT_INTERRUPTED, "interrupted");
  if (result.timedOut) {
    throw new ExitError(
      `${what} did not finish within ${minutes(timeoutMs)} and was stopped${match.command.timeoutMs === undefined ? "; a command that needs longer declares timeoutMs in its manifest" : ""}`,
      EXIT_FAILURE,
    );
  }
  if (result.exitCode === null) {
    // As a shell reports a command a signal ended: 128 + the signal's number.
    const number = result.signal !== null ? constants.signals[result.signal as NodeJS.Signals] : undefined;
    stderr.error(`${what} was ended by ${result.signal ?? "a signal"}`);
    throw new AnswerGivenExit(number !== undefined ? 128 + number : EXIT_FAILURE);
  }
  if (result.exitCode !== 0) throw new AnswerGivenExit(result.exitCode);
  return { ran: true };
}
