import { ExitError } from "../../errors.js";
import { openProject } from "../context.js";
import type { GlobalOptions } from "../context.js";
import { stdout } from "../output.js";
import { refuseInsideSession } from "../session-guard.js";

export interface DashboardOptions {
  readonly json: boolean;
}

/** How long the daemon gets to mint a login. */
const LOGIN_TIMEOUT_MS = 10_000;

/**
 * `the-loop dashboard`: a one-time login URL for the running daemon's dashboard, asked of the
 * daemon through the state root's socket (the operator's alone). The URL is printed here once and
 * nowhere else: the daemon keeps only its hash, and its first use spends it (docs/dashboard.md).
 */
export async function runDashboard(globals: GlobalOptions, options: DashboardOptions): Promise<void> {
  refuseInsideSession("dashboard");
  const project = await openProject(globals);
  const [{ callDaemon, NoDaemonError }, { dashboardLoginSchema }] = await Promise.all([
    import("../../daemon/socket/rpc.js"),
    import("../../daemon/socket/methods.js"),
  ]);
  let login;
  try {
    login = await callDaemon(project.paths.root, "dashboard.login", {}, LOGIN_TIMEOUT_MS, { result: dashboardLoginSchema });
  } catch (error) {
    if (error instanceof NoDaemonError) {
      throw new ExitError("the dashboard is served by the daemon, and none is running for this project: start it with `the-loop start`", 1, "not-found");
    }
    throw error;
  }
  if (options.json) {
    stdout.json({ url: login.url, expiresAt: login.expiresAt, operator: login.operator, readOnly: login.operator === null });
    return;
  }
  stdout.line(login.url);
  stdout.line(
    `open it in your browser before ${login.expiresAt}: it works once, and the browser then holds the login; ${login.operator === null ? "the dashboard is read-only (no dashboard.operator)" : `the dashboard acts as ${login.operator}`}`,
  );
}
