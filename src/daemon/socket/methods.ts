import { userInfo } from "node:os";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import type { CliConfig } from "../../config/schema.js";
import type { GraphActor } from "../../graph/types.js";
import type { SessionRecord } from "../../registry/record.js";
import { QUESTION_MAX } from "../../sessions/ask.js";
import { checkSessionCredential } from "../../sessions/credential.js";
import type { CredentialedSession } from "../../sessions/credential.js";
import type { Dispatcher } from "../../dispatch/dispatcher.js";
import { REASON_MAX, boundedName } from "../../sessions/names.js";
import { githubApiUrl, refHostForApiUrl } from "../../trackers/github/client.js";
import { RefError, formatWorkItemRef, parseWorkItemRef } from "../../workitem/index.js";
import type { RpcCaller, RpcHandler } from "./protocol.js";
import { OwnedElsewhereError } from "../../fleet/ownership.js";
import { forwardCommand } from "../../forwarding/commands.js";
import type { CommandForwarding } from "../../forwarding/commands.js";
import { schemaProblem } from "./protocol.js";

/**
 * The daemon socket's methods, and who may call each. Every params object is parsed with its
 * schema; a caller is a session (it presented its credential: THE_LOOP_SESSION_TOKEN) or the
 * operator (it presented none: the socket is the operator's OS user's alone). A session acts
 * for its own work item only, as its agent; the operator as the daemon's OS user. No actor
 * comes from the message. Every ref must be one the config serves, checked before any state
 * is read or written and before any request goes to a tracker.
 */

const ref = z.string().min(1).max(300);
/** A node id as graph files write them (NODE_ID_PATTERN of src/graph/definition.ts): nothing else is written into a history. */
const nodeId = z
  .string()
  .max(200)
  .regex(/^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/, "a node id is lowercase words joined by '-'");

export const graphCompleteParams = z.strictObject({
  ref,
  node: nodeId.nullish(),
  /** The config file the claiming command loaded (resolved), or null for none. */
  configFile: z.string().max(4096).nullable(),
});

export const graphForceParams = z.strictObject({
  ref,
  to: nodeId,
  reason: z
    .string()
    .min(1)
    .max(REASON_MAX * 2),
});

export const graphAnswerParams = z.strictObject({
  ref,
  decision: z.enum(["approved", "changes-requested"]),
  /** Required for changes-requested (what the agent is to change), optional for an approval. */
  reason: z
    .string()
    .max(REASON_MAX * 2)
    .nullish(),
});

export const sessionAskParams = z.strictObject({
  question: z.string().min(1).max(QUESTION_MAX),
});

/** What `graph.complete`, `graph.force` and `graph.answer` answer (ClaimAnswer of src/graph-driver/start-claim-force.ts). */
export const claimAnswerSchema = z.object({
  moved: z.boolean(),
  ref: z.string(),
  graph: z.string().nullable(),
  node: z.string().nullable(),
  status: z.string().nullable(),
  reasonCode: z.string().nullable(),
  reason: z.string().nullable(),
  notes: z.array(z.string()).optional(),
});

/** What `dashboard.login` answers: the one-time URL, printed once by `the-loop dashboard` and never logged. */
export const dashboardLoginSchema = z.object({ url: z.string(), expiresAt: z.string(), operator: z.string().nullable() });

/** What `session.ask` answers (AskAnswer of src/sessions/ask.ts). */
export const askAnswerSchema = z.object({
  workItem: z.string(),
  commentId: z.string().nullable(),
  posted: z.boolean(),
  error: z.string().nullable(),
});

// ---- the refs the config serves ---------------------------------------------------------------

export interface ServedRefs {
  /** Local projects: the configured one, and those a local poll source names (`all` when one names none). */
  readonly localProjects: ReadonlySet<string> | "all";
  /** `host/owner/repo`, lower case: the GitHub repositories the poll sources name. */
  readonly githubRepos: ReadonlySet<string>;
}

export function servedRefsOf(config: CliConfig, env: NodeJS.ProcessEnv = process.env): ServedRefs {
  let localProjects: Set<string> | "all" = new Set([config.integrations.local.project.toLowerCase()]);
  const githubRepos = new Set<string>();
  let host: string | undefined;
  for (const source of config.polling.sources) {
    if (source.provider === "local") {
      if (source.projects === undefined) localProjects = "all";
      else if (localProjects !== "all") for (const project of source.projects) localProjects.add(project.toLowerCase());
      continue;
    }
    host ??= refHostForApiUrl(githubApiUrl(config.integrations.github, env));
    for (const written of source.repos) {
      const parts = written.toLowerCase().split("/");
      githubRepos.add(parts.length === 3 ? parts.join("/") : `${host}/${parts.join("/")}`);
    }
  }
  return { localProjects, githubRepos };
}

/**
 * Why the daemon does not act on `ref`, or undefined when it serves it: a local project or a
 * GitHub repository of its config, or an item it keeps a session record of (one a webhook
 * delivery brought: the receiver has no repository list).
 */
export function unservedReason(served: ServedRefs, written: string, hasSession: (ref: string) => boolean): string | undefined {
  let parsed;
  try {
    parsed = parseWorkItemRef(written);
  } catch (error) {
    return error instanceof RefError ? error.message : "not a work item ref";
  }
  const canonical = formatWorkItemRef(parsed);
  if (parsed.tracker === "local") {
    if (served.localProjects === "all" || served.localProjects.has(parsed.project)) return undefined;
  } else if (served.githubRepos.has(`${parsed.host}/${parsed.owner}/${parsed.repo}`)) {
    return undefined;
  }
  if (hasSession(canonical)) return undefined;
  return `${canonical} is not an item this daemon serves (its local project integrations.local.project, the projects and repositories of polling.sources, or an item with a session); add its repository to the config, or run the command under the config that serves it`;
}

// ---- who calls --------------------------------------------------------------------------------

export type Caller = { readonly kind: "session"; readonly session: CredentialedSession } | { readonly kind: "operator"; readonly id: string };

export type Verdict = { readonly ok: true; readonly actor: GraphActor } | { readonly ok: false; readonly reason: string };

/** Who may claim `ref`'s node done: its own session (as its agent), or the operator. */
export function claimVerdict(caller: Caller, claimed: string): Verdict {
  if (caller.kind === "operator") return { ok: true, actor: { kind: "operator", id: caller.id } };
  if (caller.session.ref !== claimed) {
    return { ok: false, reason: `a session claims for its own work item only: this session's is ${caller.session.ref}, the claim names ${claimed}` };
  }
  return { ok: true, actor: { kind: "agent", id: caller.session.harness } };
}

/** `graph force` is the operator's: a session may not put its item (or any) on a node. */
export function forceVerdict(caller: Caller): Verdict {
  if (caller.kind === "session") {
    return {
      ok: false,
      reason:
        "graph force is an operator command, refused to a session (the request carried a session credential); the operator runs it from their own terminal",
    };
  }
  return { ok: true, actor: { kind: "operator", id: caller.id } };
}

/** `graph approve | request-changes` are the operator's: a session may not answer its own gate (or any). */
export function answerVerdict(caller: Caller): Verdict {
  if (caller.kind === "session") {
    return {
      ok: false,
      reason:
        "graph approve and graph request-changes are operator commands, refused to a session (the request carried a session credential): an agent does not answer its own gate",
    };
  }
  return { ok: true, actor: { kind: "operator", id: caller.id } };
}

/** The daemon's OS user, the only one who can reach its socket: what an uncredentialed request is recorded as. */
export function operatorName(): string {
  let name: string | undefined;
  try {
    name = userInfo().username;
  } catch {
    name = process.env.USER;
  }
  return boundedName(name ?? "") || "operator";
}

export interface SocketDeps {
  readonly config: CliConfig;
  /** The item's session record (throws when it does not parse). */
  readonly sessionOf: (ref: string) => SessionRecord | undefined;
  /** The item's graph state record (`graph.status`, a session's own); absent: the method is not served. */
  readonly graphStateOf?: (ref: string) => Promise<unknown>;
  /** What `the-loop why` reads about the item (`session.why`, a session's own); absent: the method is not served. */
  readonly whyOf?: (ref: string) => Promise<unknown>;
  /** The usage of the item's live session against routing.budget (`session.usage`, a session's own); absent: the method is not served. */
  readonly usageOf?: (ref: string) => Promise<unknown>;
  /** A one-time login URL of the dashboard (`dashboard.login`, the operator's); absent: the dashboard is off. */
  readonly dashboardLogin?: () => { readonly url: string; readonly expiresAt: string; readonly operator: string | null };
  /** On a shared database: a claim on an item another live daemon owns goes to that owner (src/forwarding/). */
  readonly forwarding?: CommandForwarding;
}

function paramsOf<T>(schema: z.ZodType<T>, raw: unknown): T {
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) throw new UsageError(`the request's params: ${schemaProblem(parsed.error)}`);
  return parsed.data;
}

function canonical(written: string): string {
  try {
    return formatWorkItemRef(parseWorkItemRef(written));
  } catch (error) {
    throw new UsageError(error instanceof RefError ? error.message : "not a work item ref");
  }
}

/**
 * The socket methods: `graph.complete`, `graph.force` (the-loop graph …), `session.ask` (the-loop
 * ask inside a session), and a session's reads of its own item — `graph.status`, `session.why` and
 * `session.usage` (the MCP server's `graph_status` and `why`, and `graph status` inside a session,
 * for a session whose socket has no place of its own).
 */
export function socketHandlers(dispatcher: Dispatcher, deps: SocketDeps): Record<string, RpcHandler> {
  const served = servedRefsOf(deps.config);
  const hasSession = (item: string): boolean => {
    try {
      return deps.sessionOf(item) !== undefined;
    } catch {
      // A record that does not parse is still a session the daemon had for the item.
      return true;
    }
  };
  const callerOf = (rpc: RpcCaller): Caller => {
    if (rpc.session === undefined) return { kind: "operator", id: operatorName() };
    const checked = checkSessionCredential(rpc.session, deps.sessionOf);
    if (!checked.ok) throw new UsageError(checked.reason);
    return { kind: "session", session: checked.session };
  };
  const servedOrRefuse = (item: string): void => {
    const reason = unservedReason(served, item, hasSession);
    if (reason !== undefined) throw new UsageError(reason);
  };
  const handlers: Record<string, RpcHandler> = {
    "graph.complete": async (raw, rpc) => {
      const params = paramsOf(graphCompleteParams, raw);
      const item = canonical(params.ref);
      const verdict = claimVerdict(callerOf(rpc), item);
      if (!verdict.ok) throw new UsageError(verdict.reason);
      servedOrRefuse(item);
      try {
        return await dispatcher.graphClaim({ ref: item, node: params.node ?? undefined, actor: verdict.actor, configFile: params.configFile });
      } catch (error) {
        if (!(error instanceof OwnedElsewhereError) || deps.forwarding === undefined) throw error;
        // A claim is an agent's or the operator's (claimVerdict): nobody else's is forwarded.
        const actor = { kind: verdict.actor.kind === "agent" ? ("agent" as const) : ("operator" as const), id: verdict.actor.id };
        const body = { command: "graph.complete" as const, ref: item, node: params.node ?? null, actor, configFile: params.configFile };
        return forwardCommand(deps.forwarding, { kind: "owner", owner: error.owner, host: error.host }, body);
      }
    },
    "graph.force": async (raw, rpc) => {
      const params = paramsOf(graphForceParams, raw);
      const verdict = forceVerdict(callerOf(rpc));
      if (!verdict.ok) throw new UsageError(verdict.reason);
      const item = canonical(params.ref);
      servedOrRefuse(item);
      const reason = boundedName(params.reason, REASON_MAX);
      if (reason === "") throw new UsageError("a force is audited: give the reason with --reason TEXT");
      return dispatcher.graphForce({ ref: item, to: params.to, reason, actor: verdict.actor });
    },
    "graph.answer": async (raw, rpc) => {
      const params = paramsOf(graphAnswerParams, raw);
      const verdict = answerVerdict(callerOf(rpc));
      if (!verdict.ok) throw new UsageError(verdict.reason);
      const item = canonical(params.ref);
      servedOrRefuse(item);
      const reason = boundedName(params.reason ?? "", REASON_MAX);
      if (params.decision === "changes-requested" && reason === "") {
        throw new UsageError("a request for changes says what to change: give it with --reason TEXT");
      }
      return dispatcher.graphAnswer({ ref: item, decision: params.decision, reason, actor: verdict.actor, via: "cli" });
    },
    "session.ask": async (raw, rpc) => {
      const params = paramsOf(sessionAskParams, raw);
      const caller = callerOf(rpc);
      if (caller.kind !== "session") {
        throw new UsageError("session.ask is for a session (it carries the session's credential); an operator asks with `the-loop ask --work-item REF`");
      }
      const item = caller.session.ref;
      servedOrRefuse(item);
      const question = params.question.trim();
      if (question === "") throw new UsageError("the question is empty");
      return dispatcher.askQuestion(item, question);
    },
  };
  // A session's reads of its own item: the credential names the item, nothing in the params does.
  const ownItem = (rpc: RpcCaller, method: string): string => {
    const caller = callerOf(rpc);
    if (caller.kind !== "session") {
      throw new UsageError(
        `${method} is for a session (it carries the session's credential); an operator reads any item with the CLI (\`the-loop graph status REF\`, \`the-loop why REF\`)`,
      );
    }
    return caller.session.ref;
  };
  const { graphStateOf, whyOf, usageOf, dashboardLogin } = deps;
  // The operator's alone: a session must not log in to the dashboard that acts for the operator.
  handlers["dashboard.login"] = async (_raw, rpc) => {
    if (callerOf(rpc).kind !== "operator")
      throw new UsageError("the dashboard's login is the operator's, refused to a session; run `the-loop dashboard` from your own terminal");
    if (dashboardLogin === undefined) {
      throw new UsageError(
        "the daemon serves no dashboard: set dashboard.enabled: true in the config (docs/dashboard.md); the running daemon takes it at its next start",
      );
    }
    return dashboardLogin();
  };
  if (graphStateOf !== undefined) handlers["graph.status"] = async (_raw, rpc) => (await graphStateOf(ownItem(rpc, "graph.status"))) ?? null;
  if (whyOf !== undefined) handlers["session.why"] = async (_raw, rpc) => await whyOf(ownItem(rpc, "session.why"));
  if (usageOf !== undefined) handlers["session.usage"] = async (_raw, rpc) => await usageOf(ownItem(rpc, "session.usage"));
  return handlers;
}
