import { z } from "zod";

/**
 * The operator's dashboard (docs/dashboard.md): a JSON API the daemon serves, secured by default.
 * It binds to loopback unless told otherwise, and then only with TLS or the explicit
 * acknowledgement below; every request needs the session cookie a one-time login URL gives
 * (`the-loop dashboard`); it acts as `operator`, one of routing.authorizedUsers, or not at all.
 */

/** The addresses that reach this machine only: a bind to one of them needs no TLS. */
export const LOOPBACK_HOSTS = ["127.0.0.1", "::1", "localhost"] as const;

export const dashboardSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe("Serve the dashboard's API from the daemon (`the-loop start`); `the-loop dashboard` prints a one-time login URL."),
    host: z
      .string()
      .min(1)
      .default("127.0.0.1")
      .describe(
        "Address the dashboard listens on. Any address but loopback (127.0.0.1, ::1, localhost) needs `tls` or `insecureAllowPlainHttp`, or the daemon refuses to start.",
      ),
    port: z.number().int().min(0).max(65_535).default(0).describe("Port the dashboard listens on (0: any free port; `the-loop status` says which)."),
    operator: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe(
        "Who the dashboard acts as: one of routing.authorizedUsers. Every action (start, stop, pause, resume, approve, request changes, answer, close) is recorded with this name and the source `dashboard`. Unset: the dashboard is read-only.",
      ),
    tls: z
      .strictObject({
        certFile: z.string().min(1).describe("PEM certificate chain (a path; relative to the config file's folder)."),
        keyFile: z.string().min(1).describe("PEM private key (a path; relative to the config file's folder). Keep it 0600."),
      })
      .optional()
      .describe("Serve HTTPS with this certificate: required to listen on any address but loopback, unless `insecureAllowPlainHttp` is set."),
    insecureAllowPlainHttp: z
      .boolean()
      .default(false)
      .describe(
        "Acknowledge serving plain HTTP on an address other than loopback: the login URL and the session cookie then cross the network unencrypted. The daemon warns at every start.",
      ),
    allowedHosts: z
      .array(z.string().min(1).max(253))
      .default([])
      .describe(
        "Further host names the dashboard answers to (the Host a browser sends, without the port), such as a reverse proxy's name. Any other Host is refused, against DNS rebinding.",
      ),
    sessionHours: z
      .number()
      .min(0.01)
      .max(24 * 30)
      .default(12)
      .describe("How long a login lasts: the session cookie is refused this many hours after the login (the daemon's restart ends every login too)."),
  })
  .describe("The operator's dashboard: a JSON API served by the daemon (docs/dashboard.md).");

export type DashboardConfig = z.output<typeof dashboardSchema>;

/** dashboard.operator must be an authorized user: the dashboard acts as them. */
export function checkDashboardOperator(
  config: { readonly dashboard: DashboardConfig; readonly routing: { readonly authorizedUsers: readonly string[] } },
  context: z.RefinementCtx,
): void {
  const operator = config.dashboard.operator;
  if (operator === undefined) return;
  if (config.routing.authorizedUsers.some((user) => user.toLowerCase() === operator.toLowerCase())) return;
  context.addIssue({
    code: "custom",
    path: ["dashboard", "operator"],
    message: `the dashboard acts as "${operator}", who is not one of routing.authorizedUsers (${config.routing.authorizedUsers.join(", ") || "none"}); add them there, or leave dashboard.operator unset for a read-only dashboard`,
  });
}
