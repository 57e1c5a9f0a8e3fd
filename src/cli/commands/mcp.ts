import { resolve } from "node:path";
import type { z } from "zod";
import { ExitError, messageOf } from "../../errors.js";
import { NoDaemonError, callDaemon, callSessionSocket } from "../../daemon/socket/rpc.js";
import type { SessionCredential } from "../../daemon/socket/rpc.js";
import { askAnswerSchema, claimAnswerSchema } from "../../daemon/socket/methods.js";
import { usageOfAnswerSchema, whyAnswerSchema, whySituationOf } from "../../daemon/socket/why-situation.js";
import type { WhyAnswer } from "../../daemon/socket/why-situation.js";
import { graphStateSchema } from "../../graph-run/state.js";
import type { TheLoopCalls, ToolAnswer } from "../../mcp/tools.js";
import { SESSION_TOKEN_ENV } from "../../sessions/credential.js";
import { fullRefOf } from "../canonical-ref.js";
import { openDaemonProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { sessionCredential, sessionSocket } from "../session-guard.js";
import { packageVersion } from "../version.js";
import { usageLine } from "../../budget/summary.js";
import { describeEvent } from "../../why/events.js";
import { explainWhy } from "../../why/explain.js";
import { statusDocument } from "./graph/runs.js";

/**
 * `the-loop mcp`: the stdio MCP server a harness starts inside a session (src/mcp/). Its calls go
 * to the running daemon exactly as the CLI's do inside a session: to the session's own socket
 * (THE_LOOP_SESSION_SOCKET) when the daemon gave it one, else to the daemon's socket, each request
 * carrying the session's credential. The daemon decides what the credential proves on every call:
 * THE_LOOP_WORK_ITEM is the agent's to change, so it names the item the credential must prove and
 * is never taken on its word.
 */

/** How long an ask waits for the daemon (its hooks may reword the question), as `the-loop ask` does. */
const ASK_TIMEOUT_MS = 120_000;
/** How long a read of the item's run or story waits. */
const READ_TIMEOUT_MS = 30_000;
/** The newest events `why` puts in its answer: the verdict weighs every one the daemon read. */
const WHY_EVENTS_SHOWN = 40;

export async function runMcp(globals: GlobalOptions): Promise<void> {
  const { serveMcpStdio } = await import("../../mcp/server.js");
  await serveMcpStdio(sessionCalls(globals), packageVersion());
}

type Request = <T>(method: string, params: unknown, timeoutMs: number, result: z.ZodType<T>) => Promise<T>;

/** The session this process runs in, or why the server cannot act for one (said at every call, so the client still lists the tools). */
function sessionOrReason(env: NodeJS.ProcessEnv): SessionCredential | string {
  try {
    return (
      sessionCredential(env) ??
      `the-loop's MCP server acts for an agent session the-loop started, and ${SESSION_TOKEN_ENV} is not set here: the-loop registers this server with the agents it starts (routing.mcp.enabled); an operator uses the CLI instead (\`the-loop ask --work-item REF\`, \`the-loop graph status REF\`, \`the-loop why REF\`)`
    );
  } catch (error) {
    return messageOf(error);
  }
}

/** The tools' calls against the daemon, for the session of `env`. */
export function sessionCalls(globals: GlobalOptions, env: NodeJS.ProcessEnv = process.env): TheLoopCalls {
  const found = sessionOrReason(env);
  const socket = sessionSocket(env);
  let project: Promise<Project> | undefined;
  const session = (): SessionCredential => {
    if (typeof found === "string") throw new ExitError(found);
    return found;
  };
  const request: Request = async (method, params, timeoutMs, result) => {
    const credential = session();
    // The session's own socket: no config, no state root (a sandboxed session sees neither).
    if (socket !== undefined) return await callSessionSocket(socket, method, params, timeoutMs, { session: credential, result });
    project ??= openDaemonProject(globals, "cli");
    try {
      return await callDaemon((await project).paths.root, method, params, timeoutMs, { session: credential, result });
    } catch (error) {
      if (error instanceof NoDaemonError) {
        throw new ExitError(
          `no daemon is running for this project (nothing listens on ${error.path}): the daemon answers every tool of the-loop's; the operator starts it with \`the-loop start\`, then call the tool again`,
        );
      }
      throw error;
    }
  };
  const own = (): string => fullRefOf(session().workItem) ?? session().workItem;
  return {
    ask: async (question) => {
      const answer = await request("session.ask", { question }, ASK_TIMEOUT_MS, askAnswerSchema);
      if (!answer.posted) {
        return {
          isError: true,
          text: `could not post the question on ${answer.workItem}: ${answer.error ?? "no reason given"}; try again in a while, or go on without it`,
        };
      }
      return { text: `Posted your question on ${answer.workItem}. Now stop and wait: the answer arrives as a new message in this session.` };
    },
    graphComplete: async (node, timeoutSeconds) => {
      // On the session's socket the daemon claims under its own config; on the daemon's, the claim names the config this command runs under.
      const configFile = socket === undefined ? configFileOf(await (project ??= openDaemonProject(globals, "cli"))) : null;
      const answer = await request("graph.complete", { ref: own(), node: node ?? null, configFile }, timeoutSeconds * 1000, claimAnswerSchema);
      return claimText(answer);
    },
    graphStatus: async () => {
      const state = await request("graph.status", {}, READ_TIMEOUT_MS, graphStateSchema.nullable());
      if (state === null) {
        return {
          isError: true,
          text: `${own()} has no graph run: it begins when the item is started with the process graph on (graph.enabled); there is nothing to claim until then`,
        };
      }
      const usage = await request("session.usage", {}, READ_TIMEOUT_MS, usageOfAnswerSchema);
      return { text: JSON.stringify(statusDocument(own(), state, state.phase ?? null, usage), null, 2) };
    },
    why: async () => whyText(await request("session.why", {}, READ_TIMEOUT_MS, whyAnswerSchema)),
  };
}

function configFileOf(project: Project): string | null {
  return project.loaded.source.path ? resolve(project.loaded.source.path) : null;
}

/** The daemon's answer to a claim, as the agent reads it; a claim that did not move the item is an error saying why. */
function claimText(answer: z.output<typeof claimAnswerSchema>): ToolAnswer {
  const notes = (answer.notes ?? []).map((note) => `\n${note}`).join("");
  if (answer.moved) return { text: `${answer.ref} moved on: now at node ${answer.node ?? "?"} (${answer.status ?? "unknown"})${notes}` };
  return {
    isError: true,
    text: `${answer.ref} did not move${answer.node ? ` (still at node ${answer.node}, ${answer.status ?? "unknown"})` : ""}: ${answer.reasonCode ?? "refused"}: ${answer.reason ?? "no reason given"}${notes}`,
  };
}

/** The item's story as `the-loop why` tells it, from the facts the daemon read (it answers, so it runs). */
export function whyText(answer: WhyAnswer): ToolAnswer {
  const situation = whySituationOf(answer);
  const verdict = explainWhy(situation);
  const lines = [`${situation.ref}: ${verdict.state}`, `  ${verdict.summary}`];
  if (verdict.lastRefusal) lines.push(`  last refusal: ${verdict.lastRefusal}`);
  lines.push(`next: ${verdict.next ?? "nothing is needed"}`);
  if (situation.usage !== undefined) lines.push(`usage: ${usageLine(situation.usage)}`);
  const shown = answer.events.slice(0, WHY_EVENTS_SHOWN);
  if (shown.length === 0) lines.push("", "what the-loop saw: nothing yet");
  else {
    lines.push("", `what the-loop saw, newest first${answer.events.length > shown.length ? ` (the newest ${shown.length} of ${answer.events.length})` : ""}:`);
    for (const record of shown) lines.push(`  ${record.ts}  ${record.level === "info" ? "" : `${record.level}: `}${describeEvent(record, situation.settings)}`);
  }
  return { text: lines.join("\n") };
}
