import { describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION, SchemaVersionError, migrate, planMigrations } from "../../src/state/postgres/migrations.js";
import type { Migration, SqlClient } from "../../src/state/postgres/migrations.js";

const known: Migration[] = [
  { version: 1, name: "one", sql: "CREATE TABLE one ()" },
  { version: 2, name: "two", sql: "CREATE TABLE two ()" },
  { version: 3, name: "three", sql: "CREATE TABLE three ()" },
];

describe("planMigrations", () => {
  it.each([
    ["a new database", [], [1, 2, 3]],
    ["one migrated to 1", [1], [2, 3]],
    ["one at this build's version", [1, 2, 3], []],
    ["one whose middle migration is missing", [1, 3], [2]],
  ])("runs what %s lacks, in order", (_case, applied, run) => {
    const plan = planMigrations(applied, [...known].reverse());
    expect("run" in plan && plan.run.map((migration) => migration.version)).toEqual(run);
  });

  it.each([
    ["newer than this build", [1, 2, 3, 4], /schema is at version 4, newer than this the-loop knows \(3\).*upgrade the-loop on this host/],
    ["migrated by another build", [1, 2, 3], /migration\(s\) 2, which this the-loop does not have/, [known[0], known[2]] as Migration[]],
  ])("refuses a database %s", (_case, applied, message, own = known) => {
    const plan = planMigrations(applied, own);
    expect("refuse" in plan && plan.refuse).toMatch(message);
  });

  it("knows its own migrations as numbered from 1 without a gap", () => {
    expect(MIGRATIONS.map((migration) => migration.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, index) => index + 1));
  });
});

/** A client that records what it is sent and answers the versions query from `applied`. */
function recording(applied: number[], failOn?: string): SqlClient & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    async query<R extends object>(text: string) {
      sent.push(text.trim().split(/\s+/).slice(0, 3).join(" "));
      if (failOn !== undefined && text.includes(failOn)) throw new Error(`failed: ${failOn}`);
      if (text.startsWith("SELECT version")) return { rows: applied.map((version) => ({ version })) as unknown as R[] };
      return { rows: [] as R[] };
    },
  };
}

describe("migrate", () => {
  it("says another process is migrating when the migration lock's wait runs out", async () => {
    const client: SqlClient = {
      query: async () => {
        throw Object.assign(new Error("canceling statement due to lock timeout"), { code: "55P03" });
      },
    };
    await expect(migrate(client, "host-a", known)).rejects.toThrow(/another the-loop has been migrating the database's schema/);
  });

  it("runs each missing migration in a transaction of its own with its row, under the lock, and unlocks", async () => {
    const client = recording([1]);
    expect(await migrate(client, "host-a", known)).toEqual({ version: 3, ran: [2, 3] });
    expect(client.sent).toEqual([
      "SELECT pg_advisory_lock($1, $2)",
      "CREATE TABLE IF",
      "SELECT version FROM",
      "BEGIN",
      "CREATE TABLE two",
      "INSERT INTO the_loop_migrations",
      "COMMIT",
      "BEGIN",
      "CREATE TABLE three",
      "INSERT INTO the_loop_migrations",
      "COMMIT",
      "SELECT pg_advisory_unlock($1, $2)",
    ]);
  });

  it("rolls a failing migration back, stops there, and still unlocks", async () => {
    const client = recording([], "three");
    await expect(migrate(client, "host-a", known)).rejects.toThrow("failed: three");
    expect(client.sent.slice(-3)).toEqual(["CREATE TABLE three", "ROLLBACK", "SELECT pg_advisory_unlock($1, $2)"]);
  });

  it("refuses a newer schema before touching it, and unlocks", async () => {
    const client = recording([1, 2, 3, 4]);
    const error = await migrate(client, "host-a", known).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect((error as SchemaVersionError).exitCode).toBe(1);
    expect(client.sent).not.toContain("BEGIN");
    expect(client.sent.at(-1)).toBe("SELECT pg_advisory_unlock($1, $2)");
  });
});
