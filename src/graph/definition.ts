import { z } from "zod";
import { GRAPH_NAME_PATTERN } from "../config/graph-schema.js";
import { closestName } from "../config/suggest.js";
import { GRAPH_OUTCOMES, LOOP_POINTS, NODE_ACTORS } from "./types.js";

/**
 * The schema of a graph file, as an operator writes one (docs/graph.md, "The file format"). It
 * checks each value on its own; the rules between values (edges name nodes, every node reaches a
 * terminal, …) are the compiler's (compile.ts). Every object is strict: a misspelt key is an
 * error, never a setting silently left out.
 */

/** A node id: kebab words (`requirements-approval`). */
export const NODE_ID_PATTERN = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
/** A phase is the label suffix in `loop:<phase>`; GitHub caps a label at 50 characters. */
export const PHASE_PATTERN = /^[a-z0-9][a-z0-9-]*$/;
export const PHASE_MAX = 50 - "loop:".length;

export const DEFAULT_MAX_ATTEMPTS = 3;
export const DEFAULT_CHECK_TIMEOUT_SECONDS = 600;
export const MAX_CHECK_TIMEOUT_SECONDS = 3_600;
/** The largest `maxGenerations` a graph file may set (a bound, not a default: without one, runs are unbounded). */
export const MAX_GENERATIONS = 1_000;

/** Separates the alternatives of one artifact entry: `requirements.md|docs/requirements.md`. */
export const ALTERNATIVE_SEPARATOR = "|";

/**
 * Why `path` cannot name an artifact, or undefined when it can. Artifacts are resolved inside the
 * session's working directory, so a path must stay there: relative, no `..`, no NUL.
 */
export function artifactPathProblem(path: string): string | undefined {
  if (path === "") return "an empty path (two `|` in a row, or one at an end)";
  if (path.includes("\0")) return "a path cannot hold a NUL character";
  if (path.includes("\\")) return `"${path}": separate folders with /, not \\`;
  if (path.startsWith("/") || path.startsWith("~")) return `"${path}": a path is relative to the session's working directory`;
  if (/^[A-Za-z]:/.test(path)) return `"${path}": a path is relative to the session's working directory`;
  if (path.split("/").includes("..")) return `"${path}": a path cannot leave the session's working directory (no ..)`;
  return undefined;
}

/** `a.md|b.md` → `["a.md", "b.md"]`, each alternative trimmed. */
export function alternativesOf(entry: string): string[] {
  return entry.split(ALTERNATIVE_SEPARATOR).map((alternative) => alternative.trim());
}

const artifactEntry = (description: string) =>
  z
    .string()
    .max(1_000)
    .superRefine((entry, context) => {
      for (const alternative of alternativesOf(entry)) {
        const problem = artifactPathProblem(alternative);
        if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
      }
    })
    .describe(description);

/** The point a capability's task content resolver runs at: per task of a `taskPlan`, never bound by `points`. */
export const TASK_POINT = "execute:task";

/** Why `value` is no loop point a node can bind: `execute:task` is the task plan's, not a node's. */
export function unknownPointMessage(value: unknown): string {
  if (value === TASK_POINT) {
    return `${TASK_POINT} is not bound to a node: it runs for each task of a node's taskPlan; give the agent node taskPlan: FILE instead`;
  }
  const shown = typeof value === "string" ? `"${value}"` : String(value);
  const close = typeof value === "string" ? closestName(value, LOOP_POINTS) : undefined;
  return `unknown loop point ${shown}; ${close !== undefined ? `did you mean "${close}"? ` : ""}a node binds any of: ${LOOP_POINTS.join(", ")}`;
}

const loopPoint = z.enum(LOOP_POINTS, { error: (issue) => unknownPointMessage(issue.input) }).describe("A loop point, one of discuss:pre … ship:post.");

const taskPlanPath = z
  .string()
  .trim()
  .max(1_000)
  .superRefine((path, context) => {
    const problem = path.includes(ALTERNATIVE_SEPARATOR)
      ? `"${path}": a task plan is one file, without \`${ALTERNATIVE_SEPARATOR}\` alternatives`
      : path === ""
        ? "an empty path"
        : artifactPathProblem(path);
    if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
  });

const nodeId = (description: string) =>
  z.string().max(64).regex(NODE_ID_PATTERN, "a node id is lowercase words joined by '-', such as design-approval").describe(description);

export const artifactCheckSchema = z
  .strictObject({
    artifact: artifactEntry("Passes when the file exists; `a.md|b.md`: when one of them does."),
  })
  .describe("An artifact exists.");

export const checklistCheckSchema = z
  .strictObject({
    checklist: artifactEntry("Passes when the first existing one of the files has at least one `- [x]` item and no unticked `- [ ]` item."),
  })
  .describe("An artifact's checklist is complete.");

export const commandCheckSchema = z
  .strictObject({
    command: z
      .array(
        z
          .string()
          .min(1)
          .refine((arg) => !arg.includes("\0"), "an argument cannot hold a NUL character"),
      )
      .min(1)
      .describe(
        "The program and its arguments, as an argv list (never a shell string), run in the session's working directory with a scrubbed environment. Exit 0 passes.",
      ),
    timeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_CHECK_TIMEOUT_SECONDS)
      .default(DEFAULT_CHECK_TIMEOUT_SECONDS)
      .describe("Longest the command may run; past it the command is stopped and the check fails."),
  })
  .describe("A command passes.");

/** The kinds of check a graph file can name: the key that says which one an entry is. */
export const CHECK_KEYS = ["artifact", "checklist", "command"] as const;
export type CheckKey = (typeof CHECK_KEYS)[number];
export const CHECK_SCHEMAS = {
  artifact: artifactCheckSchema,
  checklist: checklistCheckSchema,
  command: commandCheckSchema,
} as const;

export const checkSchema = z
  .union([artifactCheckSchema, checklistCheckSchema, commandCheckSchema])
  .describe("A check run when the agent claims the node: {artifact: …}, {checklist: …} or {command: […]}.");

export const nodeSchema = z
  .strictObject({
    id: nodeId("The node's id, unique in the graph; edges, `graph complete --node` and `graph force --to` name it."),
    phase: z
      .string()
      .max(PHASE_MAX)
      .regex(PHASE_PATTERN, "a phase is lowercase letters, digits and '-', such as design")
      .optional()
      .describe("The label suffix: while the item is here it carries `loop:<phase>`. Without one the label stays as it was."),
    actor: z
      .enum(NODE_ACTORS)
      .optional()
      .describe("`agent` (the default): the agent works and claims the node. `human`: a gate a person answers. A terminal node has none."),
    description: z
      .string()
      .trim()
      .max(4_000)
      .optional()
      .describe("What is to be done here: the agent's assignment, or what the reviewer is asked to look at. Needed by every node but a terminal one."),
    produces: z
      .array(artifactEntry("An artifact path relative to the session's working directory; `a.md|b.md` for alternatives."))
      .optional()
      .describe("Agent nodes: the files the node produces. Each entry is also a check that it exists, run first when the node is claimed."),
    checks: z.array(checkSchema).optional().describe("Agent nodes: the checks run, in order, when the agent claims the node; all must pass for its pass edge."),
    maxAttempts: z
      .number()
      .int()
      .min(1)
      .max(100)
      .optional()
      .describe(`Agent nodes: failed claims allowed before the item is blocked here (default ${DEFAULT_MAX_ATTEMPTS}).`),
    terminal: z.boolean().optional().describe("true: reaching this node ends the run (done). It has no edges out, no actor and no checks."),
    points: z
      .array(loopPoint)
      .optional()
      .describe(
        'The loop points this node binds: capabilities\' hooks at them run when the item passes them here (docs/graph.md, "Loop points"). A point is bound to one node of a graph; execute:wave:pre/post only to an agent node; no :post point to a human node.',
      ),
    taskPlan: taskPlanPath
      .optional()
      .describe(
        "Agent nodes: the plan — a Markdown checklist (`- [ ] <task-id> <title>` lines), gsd-core's `<task tracker-id=\"…\">` elements, or both — whose tasks' content capabilities' resolvers provide when the item enters this node (execute:task). One path relative to the session's working directory.",
      ),
  })
  .describe("One step of the process.");

export const edgeSchema = z
  .strictObject({
    from: nodeId("The node the edge leaves."),
    to: nodeId("The node the edge enters."),
    on: z
      .enum(GRAPH_OUTCOMES, { error: () => `unknown outcome; an edge is taken on one of: ${GRAPH_OUTCOMES.join(", ")}` })
      .describe("The outcome that takes it: `pass` or `fail` at an agent node (its claim's checks), `approved` or `changes-requested` at a human node."),
  })
  .describe("A move from one node to another on an outcome.");

export const graphFileSchema = z
  .strictObject({
    version: z.literal(1).optional().describe("Format version of this file. Optional; 1 is the only one."),
    name: z
      .string()
      .max(64)
      .regex(new RegExp(GRAPH_NAME_PATTERN), "a graph name is lowercase words joined by '-', such as work-item")
      .describe("The graph's name; a graph the config declares must have the name its `graphs` entry gives."),
    start: nodeId("The node a work item enters first."),
    maxGenerations: z
      .number()
      .int()
      .min(1)
      .max(MAX_GENERATIONS)
      .optional()
      .describe(
        "Generations a run may have (each changes-requested answer starts one): the answer that would start one more ends the run `exhausted`. Without it, a run may have any number.",
      ),
    nodes: z.array(nodeSchema).min(1).describe("Every node, each with its own id."),
    edges: z.array(edgeSchema).min(1).describe("Every move between nodes."),
  })
  .meta({
    title: "the-loop process graph",
    description: "A process graph for the-loop (docs/graph.md): the nodes a work item moves through and the edges between them.",
  });

export type GraphFile = z.output<typeof graphFileSchema>;
export type GraphFileNode = z.output<typeof nodeSchema>;
export type GraphFileEdge = z.output<typeof edgeSchema>;
export type GraphFileCheck = z.output<typeof checkSchema>;

/** Where the generated JSON Schema of graph files is checked in, beside the config's. */
export const GRAPH_SCHEMA_FILE = ".the-loop/graph.schema.json";

/** The exact text of the checked-in schema file (editors check a graph file against it). */
export function graphJsonSchemaText(): string {
  const schema = z.toJSONSchema(graphFileSchema, { target: "draft-2020-12", io: "input" });
  return `${JSON.stringify(schema, null, 2)}\n`;
}
