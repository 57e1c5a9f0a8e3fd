/**
 * `the-loop help <group> <command>` as `the-loop <group> <command> --help`. Commander's help
 * command reads only the first name after it, so `help sessions attach` would print the help of
 * `sessions`. Global options before `help` stay where they are; anything else is left to
 * commander.
 */
export function nestedHelpArgv(argv: readonly string[]): string[] {
  const args = argv.slice(2);
  let at = 0;
  while (at < args.length && args[at] !== "help") {
    const arg = args[at] ?? "";
    if (arg === "--config") at += 2;
    else if (arg.startsWith("--config=")) at += 1;
    else return [...argv];
  }
  const names = args.slice(at + 1);
  if (names.length < 2 || names.some((name) => name.startsWith("-"))) return [...argv];
  return [...argv.slice(0, 2), ...args.slice(0, at), ...names, "--help"];
}
