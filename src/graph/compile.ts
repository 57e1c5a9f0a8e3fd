import { DEFAULT_MAX_ATTEMPTS, alternativesOf } from "./definition.js";
import type { GraphFile, GraphFileCheck, GraphFileNode } from "./definition.js";
import { isPostPoint, isWavePoint } from "./points.js";
import { LOOP_POINTS } from "./types.js";
import type { Graph, GraphCheck, GraphEdge, GraphNode, GraphOutcome, LoopPoint, NodeActor } from "./types.js";
import { closestName } from "../config/suggest.js";

/**
 * A validated graph file → a `Graph`, after the rules between its values: every edge names
 * nodes, the outcomes fit the node they leave, every node is reached from the start and can
 * reach a terminal, each loop point is bound once and where it can pass. Pure: the loader reads the file and says where each problem stands.
 */

export type Segment = string | number;

/** One thing wrong with a graph, at the key path it is about. The message names the node. */
export interface GraphProblem {
  readonly path: readonly Segment[];
  readonly message: string;
}

export interface CompileOutcome {
  readonly graph?: Graph;
  readonly problems: readonly GraphProblem[];
}

/** The outcomes an edge may be taken on, by the actor of the node it leaves. */
export const OUTCOMES_BY_ACTOR: Readonly<Record<NodeActor, readonly GraphOutcome[]>> = {
  agent: ["pass", "fail"],
  human: ["approved", "changes-requested"],
};

/** The edges a node of each actor must have: somewhere to go on every answer it can get. */
const REQUIRED_OUTCOMES: Readonly<Record<NodeActor, readonly GraphOutcome[]>> = {
  agent: ["pass"],
  human: ["approved", "changes-requested"],
};

/** "did you mean" the closest of `known`, else the whole list. */
export function suggestion(unknown: string, known: readonly string[], what: string): string {
  const close = closestName(unknown, known, { prefix: true });
  if (close) return `did you mean "${close}"?`;
  return known.length > 0 ? `the ${what} are: ${known.join(", ")}` : `there are no ${what}`;
}

function compileCheck(check: GraphFileCheck): GraphCheck {
  if ("artifact" in check) return { kind: "artifact-exists", anyOf: alternativesOf(check.artifact) };
  if ("checklist" in check) return { kind: "checklist-complete", anyOf: alternativesOf(check.checklist) };
  return { kind: "command", argv: check.command, timeoutSeconds: check.timeoutSeconds };
}

function compileNode(node: GraphFileNode): GraphNode {
  const produces = (node.produces ?? []).map(alternativesOf);
  return {
    id: node.id,
    ...(node.phase !== undefined ? { phase: node.phase } : {}),
    actor: node.actor ?? "agent",
    description: node.description ?? "",
    produces,
    // Each artifact the node produces is checked first, so a claim without it fails by name.
    checks: [...produces.map((anyOf): GraphCheck => ({ kind: "artifact-exists", anyOf })), ...(node.checks ?? []).map(compileCheck)],
    maxAttempts: node.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    terminal: node.terminal ?? false,
    // The runtime dispatches in the loop's order, so the file's order is not kept.
    points: LOOP_POINTS.filter((point) => node.points?.includes(point)),
    ...(node.taskPlan !== undefined ? { taskPlan: node.taskPlan } : {}),
  };
}

/** What a node of its kind may not declare, and why. */
function nodeShapeProblems(node: GraphFileNode, at: readonly Segment[]): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const refuse = (key: keyof GraphFileNode, why: string): void => {
    if (node[key] !== undefined) problems.push({ path: [...at, key], message: `node "${node.id}": ${why}` });
  };
  if (node.terminal === true) {
    const why = "a terminal node ends the run: it is never worked on, claimed or answered";
    refuse("actor", why);
    refuse("produces", why);
    refuse("checks", why);
    refuse("maxAttempts", why);
    refuse("taskPlan", "a terminal node ends the run: no task of a plan is worked on there; put taskPlan on the agent node that implements it");
    return problems;
  }
  if (node.actor === "human") {
    const why = "a human node is decided by a person's answer at its gate, never by checks; put them on the agent node before it";
    refuse("produces", why);
    refuse("checks", why);
    refuse("maxAttempts", why);
    refuse("taskPlan", "a person answers a human node, and no agent works a plan's tasks there; put taskPlan on the agent node that implements it");
  }
  if (!node.description) {
    problems.push({
      path: [...at, "description"],
      message: `node "${node.id}" needs a description: it is what the agent is assigned, or what the reviewer is asked to look at`,
    });
  }
  return problems;
}

/**
 * The problems of the points `node` binds: each point is bound once in the graph (`boundTo`, the
 * node each earlier one is bound to, is filled in as it goes), and only where it can pass.
 */
function pointProblems(node: GraphFileNode, at: readonly Segment[], boundTo: Map<LoopPoint, string>): GraphProblem[] {
  const problems: GraphProblem[] = [];
  (node.points ?? []).forEach((point, index) => {
    const path = [...at, "points", index];
    const owner = boundTo.get(point);
    if (owner !== undefined) {
      const message =
        owner === node.id
          ? `node "${node.id}" lists \`${point}\` twice; list each point once`
          : `node "${node.id}": \`${point}\` is already bound to node "${owner}"; a loop point is bound to one node of a graph`;
      problems.push({ path, message });
      return;
    }
    boundTo.set(point, node.id);
    // A terminal node passes every point it binds when it is reached.
    if (node.terminal === true || node.actor !== "human") return;
    if (isWavePoint(point)) {
      problems.push({
        path,
        message: `node "${node.id}": \`${point}\` brackets each attempt at an agent node, and a human node has no attempts; bind it to the agent node that does the work`,
      });
    } else if (isPostPoint(point)) {
      problems.push({
        path,
        message: `node "${node.id}": a human node passes its points on entry, before anything is approved, so it cannot bind \`${point}\`; bind it to the node the approval leads to`,
      });
    }
  });
  return problems;
}

/** The nodes reachable from `from` along `next`. */
function reach(from: Iterable<string>, next: (id: string) => Iterable<string>): Set<string> {
  const seen = new Set<string>(from);
  const queue = [...seen];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    for (const other of next(id)) {
      if (!seen.has(other)) {
        seen.add(other);
        queue.push(other);
      }
    }
  }
  return seen;
}

export function compileGraph(file: GraphFile, source: string): CompileOutcome {
  const problems: GraphProblem[] = [];
  const nodes = new Map<string, GraphNode>();
  const indexOf = new Map<string, number>();
  const boundTo = new Map<LoopPoint, string>();
  file.nodes.forEach((node, index) => {
    const earlier = indexOf.get(node.id);
    if (earlier !== undefined) {
      problems.push({ path: ["nodes", index, "id"], message: `node "${node.id}" is declared twice (also nodes[${earlier}]); node ids must be unique` });
      return;
    }
    indexOf.set(node.id, index);
    nodes.set(node.id, compileNode(node));
    problems.push(...nodeShapeProblems(node, ["nodes", index]));
    problems.push(...pointProblems(node, ["nodes", index], boundTo));
  });
  const ids = [...nodes.keys()];

  const start = nodes.get(file.start);
  if (!start) {
    problems.push({ path: ["start"], message: `start names no node "${file.start}"; ${suggestion(file.start, ids, "nodes")}` });
  } else if (start.terminal) {
    problems.push({ path: ["start"], message: `start "${file.start}" is a terminal node: the run would end before it began` });
  }

  const edges: GraphEdge[] = [];
  // The outcomes each node has an edge on, counting an edge whose target is wrong: it is there.
  const declared = new Map<string, Set<GraphOutcome>>();
  let dangling = false;
  const firstEdge = new Map<string, number>();
  file.edges.forEach((edge, index) => {
    const at = ["edges", index] as const;
    const label = `edge "${edge.from}" → "${edge.to}" on ${edge.on}`;
    const from = nodes.get(edge.from);
    const to = nodes.get(edge.to);
    if (!from) problems.push({ path: [...at, "from"], message: `${label}: there is no node "${edge.from}"; ${suggestion(edge.from, ids, "nodes")}` });
    if (!to) problems.push({ path: [...at, "to"], message: `${label}: there is no node "${edge.to}"; ${suggestion(edge.to, ids, "nodes")}` });
    if (from) declared.set(from.id, (declared.get(from.id) ?? new Set()).add(edge.on));
    if (!from || !to) {
      dangling = true;
      return;
    }
    if (from.terminal) {
      problems.push({ path: at, message: `${label}: node "${from.id}" is terminal, and a terminal node has no edges out` });
      return;
    }
    const allowed = OUTCOMES_BY_ACTOR[from.actor];
    if (!allowed.includes(edge.on)) {
      problems.push({
        path: [...at, "on"],
        message: `${label}: node "${from.id}" is an ${from.actor} node, so its edges are taken on ${allowed.join(" or ")}, never ${edge.on}`,
      });
      return;
    }
    const key = `${edge.from}\0${edge.on}`;
    const earlier = firstEdge.get(key);
    if (earlier !== undefined) {
      problems.push({
        path: at,
        message: `${label}: edges[${earlier}] already leaves node "${edge.from}" on ${edge.on}; one outcome takes one edge`,
      });
      return;
    }
    firstEdge.set(key, index);
    edges.push({ from: edge.from, to: edge.to, on: edge.on });
  });

  const out = new Map<string, GraphEdge[]>();
  const into = new Map<string, GraphEdge[]>();
  for (const edge of edges) {
    out.set(edge.from, [...(out.get(edge.from) ?? []), edge]);
    into.set(edge.to, [...(into.get(edge.to) ?? []), edge]);
  }
  const terminals = ids.filter((id) => nodes.get(id)?.terminal);
  const reachesTerminal = reach(terminals, (id) => (into.get(id) ?? []).map((edge) => edge.from));
  // Reachability is judged once every reference resolves: a wrong name would make it report a
  // cascade of nodes that only seem cut off.
  const judged = start !== undefined && !start.terminal && !dangling;
  const reached = judged ? reach([start.id], (id) => (out.get(id) ?? []).map((edge) => edge.to)) : undefined;

  for (const [id, node] of nodes) {
    const at = ["nodes", indexOf.get(id) ?? 0] as const;
    const leaving = out.get(id) ?? [];
    if (!node.terminal) {
      const missing = REQUIRED_OUTCOMES[node.actor].filter((outcome) => !declared.get(id)?.has(outcome));
      for (const outcome of missing) {
        const hint = outcome === "changes-requested" ? "back to the node whose work is reviewed" : "to the next node";
        problems.push({
          path: at,
          message: `node "${id}" (${node.actor}) has no ${outcome} edge; add {from: ${id}, to: …, on: ${outcome}} ${hint}`,
        });
      }
      // A node with no edge out is reported above; what is left is one whose edges lead only to dead ends.
      if (judged && leaving.length > 0 && !reachesTerminal.has(id)) {
        problems.push({ path: at, message: `node "${id}": no terminal node can be reached from it, so a run there could never end` });
      }
    }
    if (reached && !reached.has(id)) {
      problems.push({ path: at, message: `node "${id}" cannot be reached from start "${file.start}"; add an edge to it or remove it` });
    }
  }
  if (terminals.length === 0) {
    problems.push({ path: ["nodes"], message: "the graph has no terminal node (terminal: true), so no run could end" });
  }

  if (problems.length > 0) return { problems };
  const maxGenerations = file.maxGenerations !== undefined ? { maxGenerations: file.maxGenerations } : {};
  return { graph: { name: file.name, source, start: file.start, nodes, edges, ...maxGenerations }, problems };
}
