import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { RUN_KEY, RUN_MARKER } from "../support/processes.js";
import { postgresBinDir, startPostgres } from "../support/postgres.js";

describe("the test PostgreSQL cluster", () => {
  it("runs Debian's newest server unprivileged, on a socket in its folder, and is gone after stop", async () => {
    expect(await postgresBinDir()).toMatch(/\/bin$/);
    const cluster = await startPostgres({ [RUN_MARKER]: inject(RUN_KEY) });
    let stopped = false;
    try {
      const client = new pg.Client({ connectionString: await cluster.freshDatabase() });
      await client.connect();
      try {
        const { rows } = await client.query<{ user: string; superuser: string; listen: string; sockets: string; db: string }>(
          "SELECT current_user AS user, current_setting('is_superuser') AS superuser, current_setting('listen_addresses') AS listen, current_setting('unix_socket_directories') AS sockets, current_database() AS db",
        );
        expect(rows[0]).toMatchObject({ user: cluster.user, superuser: "on", listen: "", sockets: cluster.dir });
        expect(rows[0]?.db).toMatch(/^test_\d+_\d+$/);
        // The server is not root's (initdb and pg_ctl refuse root): as root, it runs as postgres.
        const pid = Number((await readFile(join(cluster.dir, "data", "postmaster.pid"), "utf8")).split("\n")[0]);
        const uid = Number(/^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, "utf8"))?.[1]);
        expect(uid).not.toBe(0);
        if (process.getuid?.() !== 0) expect(uid).toBe(process.getuid?.());
      } finally {
        await client.end();
      }
      await cluster.stop();
      stopped = true;
      expect(existsSync(cluster.dir)).toBe(false);
    } finally {
      if (!stopped) await cluster.stop();
    }
  });
});
