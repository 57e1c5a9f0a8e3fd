import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chown, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

/**
 * A real PostgreSQL server of its own: an unprivileged cluster in a temporary folder, listening on
 * a unix socket in that folder only (no TCP port, so nothing else on the machine can reach it and
 * no port can clash), with trust authentication for its one role. `stop()` stops the server and
 * removes the folder. Free of the test runner, so a bench starts one too (bench/fleet-chaos.ts);
 * the tests start theirs through postgres.ts.
 *
 * Debian's `postgresql` package (installed by .ci/run) puts its programs in a versioned folder,
 * /usr/lib/postgresql/<major>/bin, not on the PATH: the newest one there is used. `initdb` and
 * `pg_ctl` refuse to run as root, and CI runs as root, so as root they run as the `postgres` user
 * (runuser), which owns the folder; as anyone else they run as that user.
 */

const run = promisify(execFile);

/** The newest Debian PostgreSQL binary folder, or the one `pg_config --bindir` names. */
export async function postgresBinDir(): Promise<string> {
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((name) => /^\d+(\.\d+)?$/.test(name) && existsSync(join(base, name, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest !== undefined) return join(base, newest, "bin");
  try {
    const { stdout } = await run("pg_config", ["--bindir"]);
    const dir = stdout.trim();
    if (existsSync(join(dir, "initdb"))) return dir;
  } catch {
    // No pg_config either: the message below says what to install.
  }
  throw new Error(
    "no PostgreSQL server found (looked in /usr/lib/postgresql/*/bin and pg_config --bindir): install Debian's `postgresql` (apt-get install postgresql)",
  );
}

export interface PostgresCluster {
  /** The folder holding the data directory and the socket. */
  readonly dir: string;
  /** The superuser role tests connect as. */
  readonly user: string;
  /** A connection URL to `database` (default `postgres`), over the cluster's unix socket. */
  url(database?: string): string;
  /** A new, empty database; answers its URL. */
  freshDatabase(): Promise<string>;
  /** Stops the server (fast shutdown) and removes its folder. */
  stop(): Promise<void>;
}

const ROLE = "loop";
let databases = 0;

/** Starts a cluster of its own, its processes carrying `marker` in their environment; the caller stops it. */
export async function startPostgres(marker: Readonly<Record<string, string>> = {}): Promise<PostgresCluster> {
  const bin = await postgresBinDir();
  const dir = await realpath(await mkdtemp(join(tmpdir(), "the-loop-pg-")));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chown(dir, ...(await postgresIds()));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, LANG: "C", LC_ALL: "C", ...marker };
  const as = async (program: string, args: string[]): Promise<void> => {
    const argv = asRoot ? ["-u", "postgres", "--", join(bin, program), ...args] : args;
    await run(asRoot ? "runuser" : join(bin, program), argv, { env, cwd: dir });
  };
  const stop = async (): Promise<void> => {
    if (existsSync(join(data, "postmaster.pid"))) await as("pg_ctl", ["stop", "-D", data, "-m", "fast", "-w", "-t", "30"]);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await as("initdb", ["-D", data, "-U", ROLE, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
    // Tests, not production: no fsync (a crashed test cluster is thrown away), a socket only.
    const settings = [
      "listen_addresses = ''",
      `unix_socket_directories = '${dir}'`,
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "max_connections = 200",
    ];
    await writeFile(join(data, "postgresql.auto.conf"), `${settings.join("\n")}\n`);
    if (asRoot) await chown(join(data, "postgresql.auto.conf"), ...(await postgresIds()));
    await as("pg_ctl", ["start", "-D", data, "-w", "-t", "60", "-l", join(dir, "server.log"), "-s"]);
  } catch (error) {
    await stop().catch(() => undefined); // The start failed: its error is the one worth reporting.
    throw error;
  }
  const url = (database = "postgres"): string => `postgresql://${ROLE}@localhost/${database}?host=${encodeURIComponent(dir)}`;
  return {
    dir,
    user: ROLE,
    url,
    async freshDatabase() {
      const name = `test_${process.pid}_${++databases}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop,
  };
}

async function postgresIds(): Promise<[number, number]> {
  const { stdout } = await run("id", ["postgres"]);
  const uid = /uid=(\d+)/.exec(stdout)?.[1];
  const gid = /gid=(\d+)/.exec(stdout)?.[1];
  if (uid === undefined || gid === undefined) throw new Error(`cannot read the postgres user's ids from: ${stdout}`);
  return [Number(uid), Number(gid)];
}
