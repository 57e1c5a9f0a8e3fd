/**
 * A compliance service a security team can own: a LifecycleHooks class hosted over HTTP by
 * HookServer, refusing to start work items in repositories that are not on its allowlist. The
 * same class could be declared by `path`; hosting it is a deployment choice.
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

  constructor(options: ComplianceOptions) {
    super();
    this.allowed = options.allowedRepositories.map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== "");
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

/** Starts the service; resolves once it listens. Loopback only unless COMPLIANCE_HOST says otherwise. */
export async function main(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = console.log): Promise<HookServer> {
  const token = env.COMPLIANCE_TOKEN || undefined;
  const server = new HookServer(new Compliance({ allowedRepositories: allowlistFrom(env) }), {
    ...(token === undefined ? {} : { token }),
    host: env.COMPLIANCE_HOST ?? "127.0.0.1",
    port: Number(env.COMPLIANCE_PORT ?? 8900),
  });
  const url = await server.listen();
  log(`compliance hooks listening on ${url}`);
  if (token === undefined) log("warning: COMPLIANCE_TOKEN is unset, so anyone who can reach this port can call the service");
  return server;
}

// Run directly (not imported by a test or by the-loop): serve until interrupted.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = await main();
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void server.close());
}
