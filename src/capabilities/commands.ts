import { verifyConsented } from "./consented.js";
import { bundleFile, isBundleProgram } from "./load.js";
import type { LoadedCapability } from "./load.js";
import { isCommandWords } from "./manifest.js";
import type { CapabilityCommand } from "./manifest.js";

/**
 * `the-loop <words> …`: which declared command a command line names, and the argv it runs. The
 * words come from whoever typed the command line (or from a manifest's `ref.command`), so each is
 * held to the command pattern before any is compared with a name, and what follows the name only
 * ever travels as whole argv elements.
 */

/** One word of a command's name. */
const WORD_RE = /^[a-z][a-z0-9-]*$/;

/** The arguments up to the first that is not a command word: the longest name the line could give. */
export function leadingWords(args: readonly string[]): string[] {
  const words: string[] = [];
  for (const arg of args) {
    if (!WORD_RE.test(arg)) break;
    words.push(arg);
  }
  return words;
}

export interface CommandMatch {
  readonly capability: LoadedCapability;
  readonly index: number;
  readonly command: CapabilityCommand;
  /** The arguments after the name, passed on after the command's own argv. */
  readonly rest: readonly string[];
}

/** The declared command whose name is the longest run of `args`' leading words, with the arguments after it. */
export function findCommand(capabilities: readonly LoadedCapability[], args: readonly string[]): CommandMatch | undefined {
  const words = leadingWords(args);
  for (let count = words.length; count > 0; count--) {
    const name = words.slice(0, count).join(" ");
    if (!isCommandWords(name)) continue;
    for (const capability of capabilities) {
      const index = capability.manifest.commands.findIndex((command) => command.name === name);
      const command = capability.manifest.commands[index];
      if (command !== undefined) return { capability, index, command, rest: args.slice(count) };
    }
  }
  return undefined;
}

/** Every installed command's name, sorted: what a line that names none is told it could say. */
export function commandNames(capabilities: readonly LoadedCapability[]): string[] {
  return capabilities.flatMap((capability) => capability.manifest.commands.map((command) => command.name)).sort();
}

/**
 * The value an option has among `args` (`--phase 3` or `--phase=3`; the first one counts), up
 * to a `--` that ends the options. Undefined when it is absent or has no value.
 */
export function optionValue(args: readonly string[], option: string): string | undefined {
  for (let at = 0; at < args.length; at++) {
    const arg = args[at] ?? "";
    if (arg === "--") return undefined;
    if (arg === option) return args[at + 1];
    if (arg.startsWith(`${option}=`)) return arg.slice(option.length + 1);
  }
  return undefined;
}

/**
 * The argv a match runs: the command's own, then the arguments after its name. A command runs
 * from inside its bundle and may read any file of it, so the whole bundle is checked against what
 * was consented to first (a `ConsentChangedError` when it changed). A program that is a bundle
 * file is checked again to be inside the bundle and named by its real path, so what runs is what
 * was consented to even when the working directory is not where the file is looked up.
 */
export async function commandArgv(match: CommandMatch): Promise<string[]> {
  await verifyConsented(match.capability);
  const [program = "", ...args] = match.command.argv;
  const resolved = isBundleProgram(program) ? await bundleFile(match.capability.dir, program, `commands[${match.index}].argv[0]`) : program;
  return [resolved, ...args, ...match.rest];
}
