import type { Command } from "commander";
import { commander } from "./commander.js";
import type { GlobalOptions } from "./context.js";
import type { StateMigrateOptions } from "./commands/state.js";

/**
 * `the-loop state …`: where the state's records are kept (docs/scale.md). Declared apart from
 * program.ts, which holds the rest of the command table; only commander is loaded here too.
 */
export function declareStateCommands(program: Command, globalsOf: (command: Command) => GlobalOptions): void {
  const state = program.command("state").description("the state's records: where they are kept (docs/scale.md)");
  state
    .command("migrate")
    .description("copy the state root's records into PostgreSQL (state.url / state.urlEnv), verify the counts, leave the files; refused while the daemon runs")
    .addOption(new commander.Option("--to <store>", "where to copy them").choices(["postgres"]).makeOptionMandatory())
    .option("--json", "print the counts as JSON", false)
    .action(async (options: StateMigrateOptions, command: Command) => {
      await (await import("./commands/state.js")).runStateMigrate(globalsOf(command), options);
    });
}
