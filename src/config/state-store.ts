import { EXIT_USAGE, ExitError } from "../errors.js";
import { rememberSecret } from "../secrets.js";
import type { StateStore } from "./schema.js";

/**
 * Which record store a config asks for, and for PostgreSQL the database's URL: `state.url` when
 * the config has one, else the variable `state.urlEnv` names. The URL is a secret from the moment
 * it is read (remembered for redaction at every sink), and a message about it names where it comes
 * from, never what it is.
 */

export interface StateStoreSettings {
  readonly store: StateStore;
  readonly url?: string | undefined;
  readonly urlEnv: string;
}

export type ResolvedStateStore =
  | { readonly store: "file" }
  | {
      readonly store: "postgres";
      readonly url: string;
      /** Where the URL came from, for messages: `state.url` or `$THE_LOOP_STATE_URL`. */
      readonly from: string;
    };

export function resolveStateStore(state: StateStoreSettings, env: Readonly<Record<string, string | undefined>>): ResolvedStateStore {
  if (state.store === "file") return { store: "file" };
  const fromEnv = env[state.urlEnv];
  const url = state.url ?? (fromEnv === "" ? undefined : fromEnv);
  if (url === undefined) {
    throw new ExitError(
      `state.store is postgres but no database URL is given: set $${state.urlEnv} (state.urlEnv) to the database's postgresql:// URL, or set state.url`,
      EXIT_USAGE,
      "config",
    );
  }
  rememberSecret(url);
  const from = state.url !== undefined ? "state.url" : `$${state.urlEnv}`;
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new ExitError(`${from} is not a postgresql:// URL; give the database's URL (postgresql://user@host:5432/database)`, EXIT_USAGE, "config");
  }
  return { store: "postgres", url, from };
}
