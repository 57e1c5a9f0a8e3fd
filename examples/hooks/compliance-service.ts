/**
 * A compliance service a security team can own: a LifecycleHooks class hosted over HTTP by
 * HookServer, refusing to start work items in repositories that are not on its allowlist. The
 * same class could be declared by `path` (its allowlist in `with: {allowedRepositories: […]}`);
 * hosting it is a deployment choice. No top-level `await`: a `.ts` file outside a
 * `"type": "module"` package is compiled as CommonJS, by the-loop and by tsx alike.
 *
 *   COMPLIANCE_TOKEN=… COMPLIANCE_ALLOWED_REPOS='acme/*,octo/api' npx tsx examples/hooks/compliance-service.ts
 *
 *   hooks:
 *     - name: compliance
 *       url: http://127.0.0.1:8900/
 *       tokenEnv: COMPLIANCE_TOKEN
 *       on: [work_item_start]
 *       required: true
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { HookServer, LifecycleHooks } from "the-loop/sdk/hooks";
import type { WorkItemStartContext } from "the-loop/sdk/hooks";

export interface ComplianceOptions {
  /** `owner/repo`, or `owner/*` for every repository of an owner (the project name on the local tracker). */
  readonly allowedRepositories: readonly string[];
}

export class Compliance extends LifecycleHooks {
  private readonly allowed: readonly string[];

  constructor(options: Partial<ComplianceOptions> = {}) {
    super();
    const given: unknown = options.allowedRepositories;
    // Declared by path, the list comes from `with`: a missing or malformed one fails the load, saying how to write it.
    if (!Array.isArray(given) || !given.every((entry): entry is string => typeof entry === "string")) {
      throw new TypeError('with.allowedRepositories must be a list of "owner/repo" or "owner/*", e.g. with: {allowedRepositories: ["acme/*"]}');
    }
    this.allowed = given.map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== "");
  }

  override workItemStart(context: WorkItemStartContext): WorkItemStartContext | undefined {
    const repository = context.workItem.repository;
    if (!context.proceed || this.allows(repository)) return undefined;
    return {
      ...context,
      proceed: false,
      reason: `${repository} is not on the compliance allowlist; ask the security team to add it before agents work on it`,
    };
  }

  private allows(repository: string): boolean {
    const name = repository.toLowerCase();
    const owner = name.split("/")[0];
    return this.allowed.some((entry) => entry === name || (entry.endsWith("/*") && entry.slice(0, -2) === owner));
  }
}

/** `COMPLIANCE_ALLOWED_REPOS`, comma-separated. */
export function allowlistFrom(env: NodeJS.ProcessEnv): string[] {
  return (env.COMPLIANCE_ALLOWED_REPOS ?? "").split(",").filter((entry) => entry.trim() !== "");
}

/**
 * Starts the service; resolves once it listens. Loopback only unless COMPLIANCE_HOST says
 * otherwise. Without COMPLIANCE_TOKEN it does not start: a compliance check anyone who reaches
 * the port can call, and that takes any token the-loop sends, is not one.
 */
export async function main(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = console.log): Promise<HookServer> {
  const token = env.COMPLIANCE_TOKEN ?? "";
  if (token === "") {
    throw new Error(
      "COMPLIANCE_TOKEN is unset or empty: set it to the token the-loop sends (the variable its tokenEnv names), e.g. export COMPLIANCE_TOKEN=$(openssl rand -hex 32)",
    );
  }
  const allowed = allowlistFrom(env);
  const server = new HookServer(new Compliance({ allowedRepositories: allowed }), {
    token,
    host: env.COMPLIANCE_HOST ?? "127.0.0.1",
    port: Number(env.COMPLIANCE_PORT ?? 8900),
  });
  const url = await server.listen();
  log(`compliance hooks listening on ${url}`);
  if (allowed.length === 0) log("warning: COMPLIANCE_ALLOWED_REPOS is empty, so every start is refused");
  return server;
}

/** Whether this file is the program being run (not imported by a test or by the-loop). */
function runDirectly(): boolean {
  const entry = process.argv[1];
  return entry !== undefined && resolve(entry) === fileURLToPath(import.meta.url);
}

// Serve until interrupted.
if (runDirectly()) {
  main().then(
    (server) => {
      for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void server.close());
    },
    (error: unknown) => {
      console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
      process.exitCode = 1;
    },
  );
}
