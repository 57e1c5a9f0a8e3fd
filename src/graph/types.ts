/**
 * The process graph's vocabulary, shared by the loader (graph files → Graph), the pure advance
 * (Graph + GraphState + input → GraphState + effects) and the runtime that applies effects.
 * Plain data only: nothing here reads a file or a clock.
 */

/**
 * Every outcome an edge can be taken on. Closed: a graph file naming another fails to load.
 *
 * - `pass`: an agent node's claim whose checks all passed (and, at a node without checks, the claim).
 * - `fail`: an agent node's claim whose checks did not pass. Without a `fail` edge the item stays
 *   on the node for another attempt; after `maxAttempts` failed claims it is `blocked`.
 * - `approved` / `changes-requested`: a human gate's decision, from an authorized person's
 *   keyword or a pull request review state. `changes-requested` starts the next generation.
 */
export const GRAPH_OUTCOMES = ["pass", "fail", "approved", "changes-requested"] as const;
export type GraphOutcome = (typeof GRAPH_OUTCOMES)[number];

/** Who acts at a node: the agent in the session, or a person answering a gate. */
export const NODE_ACTORS = ["agent", "human"] as const;
export type NodeActor = (typeof NODE_ACTORS)[number];

/** A check run when an agent claims a node done. */
export type GraphCheck =
  /** One of `anyOf` exists (a path relative to the session's working directory). */
  | { readonly kind: "artifact-exists"; readonly anyOf: readonly string[] }
  /** The first existing one of `anyOf` has no unticked `- [ ]` item (and at least one item). */
  | { readonly kind: "checklist-complete"; readonly anyOf: readonly string[] }
  /** A command (argv, never a shell) run in the session's directory; exit 0 = pass. */
  | { readonly kind: "command"; readonly argv: readonly string[]; readonly timeoutSeconds: number };

export type GraphCheckKind = GraphCheck["kind"];

export interface GraphNode {
  readonly id: string;
  /** The label suffix (`loop:<phase>`) shown on the ticket while the item is here; none keeps the current one. */
  readonly phase?: string;
  /** `agent` unless declared; a terminal node's actor is never consulted. */
  readonly actor: NodeActor;
  readonly description: string;
  /** Artifacts the node produces; each entry's alternatives (`a.md|b.md`) split. Each is also an implicit artifact-exists check. */
  readonly produces: readonly (readonly string[])[];
  /** The checks run at exit: the implicit artifact checks first, then the declared ones, in order. */
  readonly checks: readonly GraphCheck[];
  /** Failed claims allowed before the item is blocked here. */
  readonly maxAttempts: number;
  readonly terminal: boolean;
  /** The loop points bound here, in LOOP_POINTS order whatever order the file wrote; `pointsAt` says when each passes. */
  readonly points: readonly LoopPoint[];
  /** Agent nodes: the checklist whose tasks' content is resolved when the item enters (execute:task). */
  readonly taskPlan?: string;
}

export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  readonly on: GraphOutcome;
}

/** A graph file compiled: validated, every reference resolved. */
export interface Graph {
  readonly name: string;
  /** Where it was loaded from: `built-in` or the file's absolute path. */
  readonly source: string;
  readonly start: string;
  readonly nodes: ReadonlyMap<string, GraphNode>;
  readonly edges: readonly GraphEdge[];
  /** Generations a run may have: a changes-requested answer that would start one more ends it `exhausted`. None: unbounded. */
  readonly maxGenerations?: number;
}

/**
 * A work item's graph run. `done` and the ends without a terminal node are final: `failed`,
 * `exhausted` (out of generations, `maxGenerations`), `stalled` (no progress within
 * `graph.stallAfterMinutes`) and `canceled` (the item was closed or stopped mid-run).
 */
export const GRAPH_STATUSES = ["running", "waiting", "blocked", "done", "failed", "exhausted", "stalled", "canceled"] as const;
export type GraphStatus = (typeof GRAPH_STATUSES)[number];

/** The statuses a run ends with; a final run takes no more input. */
export const FINAL_GRAPH_STATUSES = ["done", "failed", "exhausted", "stalled", "canceled"] as const satisfies readonly GraphStatus[];
export type FinalGraphStatus = (typeof FINAL_GRAPH_STATUSES)[number];
/** How a run ends short of a terminal node. */
export type RunEndStatus = Exclude<FinalGraphStatus, "done">;

export function isFinalGraphStatus(status: GraphStatus): status is FinalGraphStatus {
  return (FINAL_GRAPH_STATUSES as readonly GraphStatus[]).includes(status);
}

/** Who moved the graph: the agent's claim, a person's gate answer, an operator's force, or the daemon itself. */
export const GRAPH_ACTOR_KINDS = ["agent", "human", "operator", "daemon"] as const;
export type GraphActorKind = (typeof GRAPH_ACTOR_KINDS)[number];

export interface GraphActor {
  readonly kind: GraphActorKind;
  /** A tracker login, an OS user, a session id; `the-loop` for the daemon. */
  readonly id: string;
}

/** What one check found. `message` is the operator's and the agent's answer: it names what is missing. */
export interface CheckResult {
  readonly check: GraphCheckKind;
  readonly passed: boolean;
  readonly message: string;
}

/**
 * The loop points a capability's steps, contributions and gates bind to, in the loop's order. A
 * graph's nodes bind them (`points:` in a graph file), so the runtime knows where it passes each.
 * `execute:task` is not one of them: it runs for each task of a node's plan.
 */
export const LOOP_POINTS = [
  "discuss:pre",
  "discuss:post",
  "plan:pre",
  "plan:post",
  "execute:pre",
  "execute:wave:pre",
  "execute:wave:post",
  "execute:post",
  "verify:pre",
  "verify:post",
  "ship:pre",
  "ship:post",
] as const;
export type LoopPoint = (typeof LOOP_POINTS)[number];
