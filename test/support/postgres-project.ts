import pg from "pg";
import { afterEach } from "vitest";
import { postgresServer } from "./postgres.js";
import { testProject } from "./project.js";
import type { ProjectOverrides, TestProject } from "./project.js";

/**
 * What a test file of the daemon or the CLI on PostgreSQL sets up: one real server for the file
 * (started before its tests, stopped after them), a fresh database on it when a test asks, and a
 * throwaway project per test, cleaned up after it. Call it at the top level of the file.
 */
export function postgresProjects(): { database(): Promise<string>; project(overrides?: ProjectOverrides): Promise<TestProject> } {
  const server = postgresServer();
  let project: TestProject | undefined;
  afterEach(async () => {
    await project?.cleanup();
    project = undefined;
  });
  return {
    database: () => server.freshDatabase(),
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
