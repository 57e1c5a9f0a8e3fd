import * as nodeModule from "node:module";
import { AnswerGivenExit, EXIT_FAILURE, EXIT_USAGE, ExitError } from "../errors.js";
import { stderr, stdout } from "./output.js";
import { packageVersion } from "./version.js";

/**
 * The one exit point of the CLI. Everything below throws (ExitError for expected failures);
 * this catches, prints, and sets the exit code: 0 ok, 1 runtime failure, 2 usage or config error.
 */

// Node 22 can cache compiled code between runs, which shortens every cold start after the first.
const cache = nodeModule as { enableCompileCache?: () => unknown };
cache.enableCompileCache?.();

function wantsJson(argv: readonly string[]): boolean {
  return argv.includes("--json") || argv.some((arg, i) => (arg === "--format" && argv[i + 1] === "json") || arg === "--format=json");
}

async function report(error: unknown, json: boolean): Promise<number> {
  const { commander } = await import("./commander.js");
  if (error instanceof commander.CommanderError) {
    // Commander has already printed help, the version or the usage error itself.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
  if (error instanceof AnswerGivenExit) return error.exitCode;
  if (error instanceof ExitError) {
    if (json) stdout.json({ error: { code: error.code, message: error.message, details: error.details } });
    // An empty message means there is nothing to say (an interrupted --follow, say).
    if (error.message) stderr.error(error.message);
    for (const detail of error.details) stderr.line(`  ${detail}`);
    return error.exitCode;
  }
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (json) stdout.json({ error: { code: "internal", message: error instanceof Error ? error.message : String(error) } });
  stderr.error(`unexpected failure — this is a bug in the-loop; please report it with the lines below:\n${message}`);
  return EXIT_FAILURE;
}

async function main(argv: readonly string[]): Promise<number> {
  // `--version` alone is answered before commander and the command table load: scripts call it
  // to probe for the-loop, and it should cost no more than starting Node. (The program declares
  // the same flag, with the same version, for its help text.)
  const args = argv.slice(2);
  if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
    stdout.line(packageVersion());
    return 0;
  }
  // Top-level help likewise, from text generated out of the same command table (help-text.ts).
  if (args.length === 1 && (args[0] === "--help" || args[0] === "-h")) {
    const { TOP_LEVEL_HELP } = await import("./help-text.js");
    process.stdout.write(TOP_LEVEL_HELP);
    return 0;
  }
  try {
    const [{ buildProgram }, { nestedHelpArgv }] = await Promise.all([import("./program.js"), import("./nested-help.js")]);
    await buildProgram().parseAsync(nestedHelpArgv(argv));
    return 0;
  } catch (error) {
    return report(error, wantsJson(argv));
  }
}

// A reader that stops early (`the-loop sessions list | head`) closes the pipe; what is left to
// print has nowhere to go, which is not a failure of the command.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await main(process.argv);
