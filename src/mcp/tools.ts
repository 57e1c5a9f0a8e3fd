import { MCP_TOOL_NAMES } from "../harness/mcp.js";
import type { McpToolName } from "../harness/mcp.js";
import { QUESTION_MAX } from "../sessions/ask.js";

/**
 * The tools of the-loop's MCP server: what each is for, the JSON Schema of its input, and the
 * reading of its arguments. Every tool acts for the session the server runs in — its work item is
 * the one the session's credential proves, checked by the daemon on every call — so no tool takes
 * a work item: there is no other item it could name.
 */

/** What a tool call is answered with: text for the agent, an error when it did not do what it was asked. */
export interface ToolAnswer {
  readonly text: string;
  readonly isError?: boolean;
}

/** What the tools do, against the running daemon (the CLI builds it: src/cli/commands/mcp.ts). */
export interface TheLoopCalls {
  ask(question: string): Promise<ToolAnswer>;
  graphComplete(node: string | undefined, timeoutSeconds: number): Promise<ToolAnswer>;
  graphStatus(): Promise<ToolAnswer>;
  why(): Promise<ToolAnswer>;
}

/** A JSON Schema object, as MCP lists a tool's input. */
export interface ToolInputSchema {
  readonly type: "object";
  readonly properties: Readonly<Record<string, object>>;
  readonly required?: readonly string[];
  readonly additionalProperties: false;
}

export interface ToolDefinition {
  readonly name: McpToolName;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: ToolInputSchema;
}

/** How long graph_complete waits for the daemon's decision by default, and at most (its checks may run a test suite). */
export const COMPLETE_TIMEOUT_DEFAULT_S = 600;
export const COMPLETE_TIMEOUT_MAX_S = 3_600;
/** A node id as graph files write them (NODE_ID_PATTERN of src/graph/definition.ts). */
const NODE_ID = "^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$";

const NO_INPUT: ToolInputSchema = { type: "object", properties: {}, additionalProperties: false };

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: "ask",
    title: "Ask the humans",
    description:
      "Post a question on this session's work item (marked as the-loop's, so it is never read back as a command). Then stop and wait: the answer arrives as a new message in this session. Use it when you need a decision or information only a person has.",
    inputSchema: {
      type: "object",
      properties: {
        question: { type: "string", minLength: 1, maxLength: QUESTION_MAX, description: "The question, as the people on the work item should read it." },
      },
      required: ["question"],
      additionalProperties: false,
    },
  },
  {
    name: "graph_complete",
    title: "Claim the current node done",
    description:
      "Claim that this session's work item has finished its current node of the process graph. The daemon runs the node's checks and decides: the answer says whether the item moved on, and if not, why and what to fix before claiming again.",
    inputSchema: {
      type: "object",
      properties: {
        node: {
          type: "string",
          pattern: NODE_ID,
          maxLength: 200,
          description: "The node you claim done; leave it out to claim the node the item is at now (a claim naming another node is refused).",
        },
        timeout_seconds: {
          type: "number",
          exclusiveMinimum: 0,
          maximum: COMPLETE_TIMEOUT_MAX_S,
          default: COMPLETE_TIMEOUT_DEFAULT_S,
          description: "How long to wait for the daemon's decision (its checks may run a test suite).",
        },
      },
      additionalProperties: false,
    },
  },
  {
    name: "graph_status",
    title: "This item's graph run",
    description:
      "Where this session's work item is in its process graph: graph, node, phase, status, generation, why it waits, its recent history, and this session's usage against its budget (tokens, minutes, limits) (JSON).",
    inputSchema: NO_INPUT,
  },
  {
    name: "why",
    title: "Why this item stands where it does",
    description:
      "What the-loop saw and decided about this session's work item, in plain words and newest first, the one thing that would move it now, and this session's usage against its budget.",
    inputSchema: NO_INPUT,
  },
];

/** A tool's arguments that do not fit its schema: the text says what to send instead. */
export class ToolInputError extends Error {
  override readonly name: string = "ToolInputError";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The arguments `tool` was called with, as an object of known keys only. */
function argumentsOf(tool: ToolDefinition, given: unknown): Record<string, unknown> {
  const args = given ?? {};
  if (!isRecord(args)) throw new ToolInputError(`${tool.name} takes an object of arguments`);
  const known = Object.keys(tool.inputSchema.properties);
  const unknown = Object.keys(args).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    const takes = known.length === 0 ? "takes no arguments" : `takes ${known.join(", ")}`;
    throw new ToolInputError(`${tool.name} ${takes}; leave out ${unknown.join(", ")} (it acts for this session's own work item)`);
  }
  return args;
}

function questionOf(args: Record<string, unknown>): string {
  const question = args.question;
  if (typeof question !== "string") throw new ToolInputError("ask needs question: the text to post on the work item");
  const text = question.trim();
  if (text === "") throw new ToolInputError("ask needs a question with some text in it");
  if (text.length > QUESTION_MAX) throw new ToolInputError(`the question is too long (at most ${QUESTION_MAX} characters): shorten it and ask again`);
  return text;
}

function claimOf(args: Record<string, unknown>): { node: string | undefined; timeoutSeconds: number } {
  const { node, timeout_seconds: timeout } = args;
  if (node !== undefined && (typeof node !== "string" || node.length > 200 || !new RegExp(NODE_ID).test(node))) {
    throw new ToolInputError("node is a node id as the graph writes it (lowercase words joined by '-'), or left out for the item's current node");
  }
  if (timeout !== undefined && (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout <= 0 || timeout > COMPLETE_TIMEOUT_MAX_S)) {
    throw new ToolInputError(`timeout_seconds is a number of seconds above 0 and at most ${COMPLETE_TIMEOUT_MAX_S}`);
  }
  return { node, timeoutSeconds: timeout ?? COMPLETE_TIMEOUT_DEFAULT_S };
}

/** Runs tool `name` with `given` arguments; an unknown tool or a bad argument is answered with an error saying what to send. */
export async function callTool(calls: TheLoopCalls, name: string, given: unknown): Promise<ToolAnswer> {
  const tool = TOOLS.find((candidate) => candidate.name === name);
  if (tool === undefined) throw new ToolInputError(`no tool ${JSON.stringify(name)}: the-loop's tools are ${MCP_TOOL_NAMES.join(", ")}`);
  const args = argumentsOf(tool, given);
  switch (tool.name) {
    case "ask":
      return await calls.ask(questionOf(args));
    case "graph_complete": {
      const claim = claimOf(args);
      return await calls.graphComplete(claim.node, claim.timeoutSeconds);
    }
    case "graph_status":
      return await calls.graphStatus();
    case "why":
      return await calls.why();
  }
}
