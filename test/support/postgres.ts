import { afterAll, beforeAll, inject } from "vitest";
import { RUN_KEY, RUN_MARKER } from "./processes.js";
import { startPostgres } from "./postgres-cluster.js";
import type { PostgresCluster } from "./postgres-cluster.js";

export { postgresBinDir, startPostgres } from "./postgres-cluster.js";
export type { PostgresCluster } from "./postgres-cluster.js";

/**
 * The real PostgreSQL server for the tests that need one (postgres-cluster.ts). The server carries
 * the run's marker (processes.ts) but not the worker's: the per-test leak guard leaves a cluster
 * started for a whole file alone, and the run's teardown still finds and kills one a crashed
 * worker left behind.
 */

/**
 * One real server for the test file: started before its tests, stopped after them (after the
 * file's own afterAll hooks, which run first). Call it at the top level of the file.
 */
export function postgresServer(): { freshDatabase(): Promise<string> } {
  let cluster: PostgresCluster | undefined;
  beforeAll(async () => {
    cluster = await startPostgres({ [RUN_MARKER]: inject(RUN_KEY) });
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return {
    freshDatabase: async () => {
      if (cluster === undefined) throw new Error("the PostgreSQL server is not started: call postgresServer() at the top level of the test file");
      return cluster.freshDatabase();
    },
  };
}
