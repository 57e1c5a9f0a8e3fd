import * as nodeModule from "node:module";
import { AnswerGivenExit, EXIT_FAILURE, EXIT_USAGE, ExitError } from "../errors.js";
import type { Command } from "commander";
import type { GlobalOptions } from "./context.js";
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
  let installed: readonly string[] = [];
  try {
    const [{ buildProgram }, { nestedHelpArgv }] = await Promise.all([import("./program.js"), import("./nested-help.js")]);
    const program = buildProgram();
    const capability = capabilityLine(args, program);
    if (capability !== undefined) {
      // Not a command of the-loop's own: a command an installed capability declares, perhaps.
      const outcome = await (await import("./commands/capabilities/run-command.js")).runCapabilityCommand(capability.globals, capability.args);
      if (outcome.ran) return 0;
      installed = outcome.installed;
    }
    await program.parseAsync(nestedHelpArgv(argv));
    return 0;
  } catch (error) {
    if (installed.length > 0 && error instanceof Error && "code" in error && error.code === "commander.unknownCommand") {
      stderr.line(`hint: the installed capabilities' commands are ${installed.map((name) => `\`the-loop ${name}\``).join(", ")}`);
    }
    return report(error, wantsJson(argv));
  }
}

/**
 * The line's global options and the arguments from its first operand on, when that operand is not
 * a command of the program's (its names, aliases and `help`); otherwise undefined, and commander
 * has the line. Global options are read as commander reads them before a command: `--config`.
 */
function capabilityLine(args: readonly string[], program: Command): { globals: GlobalOptions; args: string[] } | undefined {
  let at = 0;
  let config: string | undefined;
  while (at < args.length) {
    const arg = args[at] ?? "";
    if (arg === "--config") {
      config = args[at + 1];
      at += 2;
    } else if (arg.startsWith("--config=")) {
      config = arg.slice("--config=".length);
      at += 1;
    } else break;
  }
  const first = args[at];
  if (first === undefined || first.startsWith("-")) return undefined;
  const builtIn = program.commands.some((command) => command.name() === first || command.aliases().includes(first));
  if (builtIn || first === "help") return undefined;
  return { globals: config !== undefined ? { config } : {}, args: args.slice(at) };
}

// A reader that stops early (`the-loop sessions list | head`) closes the pipe; what is left to
// print has nowhere to go, which is not a failure of the command.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await main(process.argv);
// The database connections a command opened (state.store: postgres) would keep the process alive.
await (await import("./stores.js")).closeCommandStores();
