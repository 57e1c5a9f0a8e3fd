import { hostname } from "node:os";
import { EXIT_FAILURE, ExitError } from "../../errors.js";
import { daemonStatus } from "../../daemon/start-stop.js";
import { migrateState } from "../../stores/migrate-state.js";
import type { MigrationResult } from "../../stores/migrate-state.js";
import { openStores, storesOn } from "../../stores/stores.js";
import { displayPath, loadCommandConfig, printConfigWarnings } from "../context.js";
import type { GlobalOptions } from "../context.js";
import { formatTable, stdout } from "../output.js";

export interface StateMigrateOptions {
  readonly to: "postgres";
  readonly json: boolean;
}

/**
 * `the-loop state migrate --to postgres` (docs/scale.md): copies the state root's records into the
 * database `state.url` / `state.urlEnv` names, whatever `state.store` says now (the usual order:
 * stop the daemon, migrate, set `state.store: postgres`, start). Refused while the daemon runs on
 * this state root, which would go on writing files the copy has passed. Exit 1 when a count does
 * not verify.
 */
export async function runStateMigrate(globals: GlobalOptions, options: StateMigrateOptions): Promise<void> {
  const loaded = await loadCommandConfig(globals);
  printConfigWarnings(loaded);
  const { config, paths } = loaded;
  const running = (await daemonStatus(config, paths)).filter((service) => service.running);
  if (running.length > 0) {
    throw new ExitError(
      `the daemon runs on ${displayPath(paths.root)} (${running.map((service) => service.name).join(", ")}): stop it (\`the-loop stop\`) before migrating its state, so no record changes during the copy`,
      EXIT_FAILURE,
      "conflict",
    );
  }
  const target = await openStores({ state: { ...config.state, store: options.to } }, paths, { name: `${hostname()} state migrate` });
  let result: MigrationResult;
  try {
    result = await migrateState(storesOn(paths), target, paths);
  } finally {
    await target.close();
  }
  if (options.json) stdout.json({ from: paths.root, to: options.to, ...result });
  else {
    stdout.line(`copied the state root ${displayPath(paths.root)} into PostgreSQL (the files are left as they are):`);
    stdout.line(
      formatTable(
        ["store", "files", "copied", "unchanged", "kept", "damaged", "verified"],
        result.kinds.map((kind) => [
          kind.name,
          String(kind.files),
          String(kind.copied),
          String(kind.unchanged),
          String(kind.kept),
          String(kind.problems.length),
          kind.verified ? "yes" : "NO",
        ]),
      ),
    );
    for (const kind of result.kinds) for (const problem of kind.problems) stdout.line(`not copied: ${problem.where}: ${problem.message}`);
    if (result.kinds.some((kind) => kind.kept > 0)) {
      stdout.line("kept: the database already held another version of these records (written there since), and keeps it");
    }
    if (config.state.store !== "postgres") stdout.line("next: set state.store: postgres in the config, then `the-loop start`");
  }
  if (!result.verified) {
    throw new ExitError("some records copied do not read back from the database (verified: NO above): run the migration again, or see `the-loop status`");
  }
}
