import pg from "pg";
import { afterAll, afterEach, beforeAll } from "vitest";
import { startPostgres } from "./postgres.js";
import type { PostgresCluster } from "./postgres.js";
import { testProject } from "./project.js";
import type { ProjectOverrides, TestProject } from "./project.js";

/**
 * What a test file of the daemon or the CLI on PostgreSQL sets up: one real server for the file
 * (started before its tests, stopped after them), a fresh database on it when a test asks, and a
 * throwaway project per test, cleaned up after it. Call it at the top level of the file.
 */
export function postgresProjects(): { database(): Promise<string>; project(overrides?: ProjectOverrides): Promise<TestProject> } {
  let cluster: PostgresCluster | undefined;
  let project: TestProject | undefined;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterEach(async () => {
    await project?.cleanup();
    project = undefined;
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return {
    database: async () => {
      if (cluster === undefined) throw new Error("the PostgreSQL server is not started: call postgresProjects() at the top level of the test file");
      return cluster.freshDatabase();
    },
    project: async (overrides = {}) => {
      project = await testProject(overrides);
      return project;
    },
  };
}

/** The rows `sql` answers on the database at `url`, on a connection of its own. */
export async function queryRows<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
