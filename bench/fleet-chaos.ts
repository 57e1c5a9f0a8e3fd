/**
 * Figures: the fleet's chaos run (docs/scale.md, "The chaos run"). Three real daemons, each with
 * a state folder and a tmux server of its own, on one real PostgreSQL server (a throwaway cluster,
 * test/support/postgres-cluster.ts) and one local project; 200 items (20 with BENCH_QUICK=1, as
 * CI runs it) each started by its arming label, commented on and closed through the CLI; `kill -9`
 * of the daemon running the most agents halfway through, then its restart
 * (test/support/fleet-chaos.ts, which the chaos test runs too).
 *
 * Printed: items finished and lost, comments lost, samples of the three tmux servers and the items
 * seen live on two at once, the orphans and their adoption (the latest, against the lease bound
 * plus 5 s), and the throughput, events per second across daemons from the shared event table.
 * Unlike the timing figures, these are correctness: a double, a lost item or comment, or a late
 * adoption makes the script exit 1 in either mode.
 */
import { chaosBreaches, runFleetChaos } from "../test/support/fleet-chaos.js";
import { startPostgres } from "../test/support/postgres-cluster.js";
import { printFigure, printHeading, scaled } from "./lib.js";

const items = scaled(200, 20);
const cluster = await startPostgres();
let breaches: string[];
try {
  const figures = await runFleetChaos({
    url: await cluster.freshDatabase(),
    items,
    workers: scaled(24, 8),
    daemons: 3,
    maxLiveSessions: scaled(18, 6),
    perDaemon: scaled(8, 3),
    log: (line) => console.log(`    ${line}`),
  });
  printHeading(`fleet chaos: ${figures.daemons} daemons on one database, ${items} items, kill -9 of ${figures.killed} halfway, then its restart`);
  printFigure({ label: "items finished", value: figures.finished, unit: "items", note: `of ${figures.items}` });
  printFigure({ label: "items lost", value: figures.lostItems.length, unit: "items" });
  printFigure({ label: "comments lost", value: figures.lostComments.length, unit: "items", note: `of ${figures.comments}` });
  printFigure({ label: "items with two live agents at once", value: figures.doubles.length, unit: "items", note: `${figures.samples} samples` });
  printFigure({ label: "orphaned by the kill", value: figures.orphaned.length, unit: "items" });
  printFigure({ label: "orphans closed before an adoption", value: figures.closedOrphans.length, unit: "items", note: "ended by the next owner" });
  printFigure({ label: "orphans neither adopted nor ended", value: figures.notAdopted.length, unit: "items" });
  const latest = Math.max(0, ...[...figures.adoptions, ...figures.closedOrphans].map((orphan) => orphan.afterKillMs));
  printFigure({
    label: "latest adoption (or close) after the kill",
    value: latest / 1000,
    unit: "s",
    note: `bound ${figures.adoptionBoundMs / 1000} s (lease + grace + 5 s)`,
  });
  printFigure({ label: "throughput across daemons", value: figures.eventsPerSecond, unit: "ev/s", note: `${figures.events} events` });
  for (const [by, count] of Object.entries(figures.eventsBy)) printFigure({ label: `  events recorded by ${by}`, value: count, unit: "ev" });
  printFigure({ label: "CLI commands typed again after a failure", value: figures.cliRetries, unit: "cmds", note: "see the log lines above" });
  const { peakConnections } = figures;
  printFigure({
    label: "peak connections on the server",
    value: peakConnections.total,
    unit: "conns",
    note: `of max_connections ${peakConnections.maxConnections}`,
  });
  for (const [name, count] of Object.entries(peakConnections.byName)) printFigure({ label: `  held by ${name}, at most`, value: count, unit: "conns" });
  printFigure({ label: "run", value: figures.wallMs / 1000, unit: "s" });
  breaches = chaosBreaches(figures);
} finally {
  await cluster.stop();
}
for (const breach of breaches) console.error(`fleet chaos: ${breach}`);
process.exitCode = breaches.length > 0 ? 1 : 0;
