import { hostname } from "node:os";
import { EXIT_FAILURE, ExitError, messageOf } from "../errors.js";
import { redactKnownSecrets } from "../secrets.js";
import { BudgetStore, budgetDir } from "../budget/store.js";
import type { CliConfig } from "../config/schema.js";
import { resolveStateStore } from "../config/state-store.js";
import { ControlStore } from "../control/store.js";
import { CiAttemptStore } from "../feedback/attempts.js";
import { openHeldGateAnswers } from "../graph-run/held.js";
import type { HeldGateAnswerStore } from "../graph-run/held.js";
import { openGraphStates } from "../graph-run/store.js";
import type { GraphStateStore } from "../graph-run/store.js";
import { PullRequestLinks } from "../registry/pr-links.js";
import { SessionRegistry } from "../registry/registry.js";
import { StartQueue, startQueueFile } from "../registry/start-queue.js";
import { FILE_BACKEND, openRecordBackend } from "../state/backend.js";
import type { RecordBackend } from "../state/backend.js";
import type { DocumentStore } from "../state/document.js";
import type { SharedEventLog } from "../events/table.js";
import type { StatePaths } from "../state/layout.js";

/**
 * Every store of a state, opened in one place on one backend (`state.store`): files under the state
 * root, or one PostgreSQL database (docs/scale.md). The daemon opens them once for its life; a CLI
 * command that reads or writes records opens them for the command. What stays on the host whatever
 * the backend (the socket, pidfiles, the daemon's log, checkouts, scratch files, caches) is not a
 * store: it stays under the state root.
 */
export interface Stores {
  readonly backend: RecordBackend;
  readonly registry: SessionRegistry;
  readonly control: ControlStore;
  readonly graphStates: GraphStateStore;
  readonly heldAnswers: HeldGateAnswerStore;
  readonly links: PullRequestLinks;
  readonly ciAttempts: CiAttemptStore;
  readonly startQueue: StartQueue;
  readonly budgets: BudgetStore;
  /**
   * The poller's cursors and ETags in the database; undefined on files, where the poller keeps its
   * state file (polling.stateFile, and the legacy file it may still read).
   */
  readonly pollState: DocumentStore | undefined;
  /**
   * The event log as a table of the database, which every host on it writes and reads; undefined
   * on files, where it is the state root's JSONL file (eventLog.path).
   */
  readonly eventLog: SharedEventLog | undefined;
  /** Writes the events still queued for the table, then ends the backend's connections. */
  close(): Promise<void>;
}

/** The stores of `paths` on `backend` (files when omitted): builds objects, opens nothing. */
export function storesOn(paths: StatePaths, backend: RecordBackend = FILE_BACKEND, eventLog?: SharedEventLog): Stores {
  const on = backend === FILE_BACKEND ? {} : { backend };
  return {
    backend,
    registry: new SessionRegistry({ dir: paths.registryDir, ...on }),
    control: new ControlStore({ dir: paths.controlDir, ...on }),
    graphStates: openGraphStates(paths, { backend: on.backend }),
    heldAnswers: openHeldGateAnswers(paths, on),
    links: new PullRequestLinks(paths.linksDir, undefined, backend),
    ciAttempts: new CiAttemptStore(paths.ciDir, undefined, backend),
    startQueue: new StartQueue({ file: startQueueFile(paths.root), ...on }),
    budgets: new BudgetStore({ dir: budgetDir(paths.root), ...on }),
    pollState: backend.store === "file" ? undefined : backend.document({ name: "poll-state", file: paths.pollStateFile }),
    eventLog,
    close: async () => {
      await eventLog?.flush();
      await backend.close();
    },
  };
}

export interface OpenStoresOptions {
  /** Who opens them (a daemon's name, `cli`): the database connections' application_name. Default: the host's name. */
  readonly name?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The name the events this process records carry in the table (default: the host's name). */
  readonly host?: string;
}

/**
 * The stores the config asks for. On PostgreSQL this connects, migrates the schema (or refuses one
 * newer than this build) and loads the mirror the synchronous readers answer from; a URL that is
 * missing or not a URL is a config error (exit 2) naming what to set.
 */
export async function openStores(config: Pick<CliConfig, "state">, paths: StatePaths, options: OpenStoresOptions = {}): Promise<Stores> {
  const resolved = resolveStateStore(config.state, options.env ?? process.env);
  if (resolved.store === "file") return storesOn(paths);
  let backend: RecordBackend;
  try {
    backend = await openRecordBackend({ store: "postgres", url: resolved.url, name: options.name ?? hostname() });
  } catch (error) {
    // A schema this build cannot use says so itself, with what to do.
    if (error instanceof ExitError) throw error;
    throw new ExitError(
      `cannot open the state database (state.store: postgres, the URL in ${resolved.from}): ${redactKnownSecrets(messageOf(error))}; ` +
        "check that the server runs and the URL names it, its user and database, or set state.store: file",
      EXIT_FAILURE,
    );
  }
  const database = backend.database;
  if (database === undefined) return storesOn(paths, backend);
  const { tableEventLog } = await import("./event-log.js");
  return storesOn(paths, backend, tableEventLog({ database, host: options.host ?? hostname() }));
}

/** Whether the config keeps its records in a database (no URL is resolved, nothing is opened). */
export function storesAreShared(config: Pick<CliConfig, "state">): boolean {
  return config.state.store !== "file";
}
