/**
 * The bounded command runner: argv (never a shell), a working directory, a deadline that stops
 * the command's whole process group and what it started (tree.ts), exactly the environment given
 * (plus the run's mark), output capped per stream.
 * It imports only node: built-ins, so any floor above may run commands through it.
 */
export { BASE_ENV_NAMES, DEFAULT_OUTPUT_CAP_BYTES, InvalidCommandError, allowListedEnv, describeOutcome, formatDuration, runBounded } from "./run.js";
export type { BoundedCommand, BoundedResult } from "./run.js";
export { clip, outputTail, stripControlCharacters, wholeUtf8Suffix } from "./text.js";
export { RUN_ID_ENV } from "./tree.js";
