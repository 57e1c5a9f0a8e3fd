import { promises as fs } from "node:fs";
import { relative } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import { EXIT_USAGE, ExitError, errnoOf } from "../errors.js";
import { offsetOf } from "../config/parse.js";
import { escapeControlCharacters } from "../config/problem.js";
import { compileGraph, suggestion } from "./compile.js";
import type { GraphProblem, Segment } from "./compile.js";
import { CHECK_KEYS, CHECK_SCHEMAS, edgeSchema, graphFileSchema, nodeSchema } from "./definition.js";
import type { Graph } from "./types.js";

/**
 * Graph file → `Graph`: YAML with a line counter, the file schema, then the compiler's rules,
 * every problem found at once and reported as the config's are: `file:line:column: key: message`,
 * the message naming the node it is about.
 */

/** A problem with the line and column where it stands in the file. */
export interface LocatedGraphProblem extends GraphProblem {
  readonly line?: number;
  readonly column?: number;
}

export interface GraphParseOutcome {
  readonly graph?: Graph;
  readonly problems: readonly LocatedGraphProblem[];
}

export interface GraphParseOptions {
  /** `built-in` or the file's absolute path: what `Graph.source` says. */
  readonly source: string;
  /** The name the config gives the graph (`graphs[i].name`); the file's must be the same. */
  readonly expectedName?: string;
  /** Where the expected name comes from, for the message (`graphs[0] in .the-loop/cli-config.yaml`). */
  readonly namedBy?: string;
}

/** A graph that cannot be used: exit 2, as a config error, each problem naming its file and node. */
export class GraphError extends ExitError {
  override readonly name: string = "GraphError";
  readonly problems: readonly string[];
  constructor(problems: readonly string[], files: readonly string[]) {
    // What a problem quotes from a file (or a configured path) is input: its control characters are escaped.
    const escaped = problems.map(escapeControlCharacters);
    const only = escaped.length === 1 ? escaped[0] : undefined;
    const where = escapeControlCharacters(files.length === 1 ? `graph file ${files[0]}` : `graph files ${files.join(", ")}`);
    super(only ? `invalid graph: ${only}` : `invalid ${where}: ${escaped.length} problems`, EXIT_USAGE, "config", only ? [] : escaped);
    this.problems = escaped;
  }
}

export function formatPath(path: readonly Segment[]): string {
  return path.reduce<string>((text, segment) => (typeof segment === "number" ? `${text}[${segment}]` : text ? `${text}.${segment}` : segment), "");
}

/** `file:line:col: key.path: message`, the form every graph problem is reported in; control characters escaped as the config's are. */
export function formatGraphProblem(problem: LocatedGraphProblem, file: string): string {
  const position = problem.line ? `:${problem.line}${problem.column ? `:${problem.column}` : ""}` : "";
  const key = problem.path.length > 0 ? `${formatPath(problem.path)}: ` : "";
  return escapeControlCharacters(`${file}${position}: ${key}${problem.message}`);
}

function valueAt(raw: unknown, path: readonly Segment[]): unknown {
  let value = raw;
  for (const segment of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = Reflect.get(value, String(segment));
  }
  return value;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The keys a strict object at `path` knows, for an unknown key's "did you mean". */
function knownKeysAt(raw: unknown, path: readonly Segment[]): readonly string[] {
  if (path.length === 0) return Object.keys(graphFileSchema.shape);
  if (path.length === 2 && path[0] === "nodes") return Object.keys(nodeSchema.shape);
  if (path.length === 2 && path[0] === "edges") return Object.keys(edgeSchema.shape);
  const check = valueAt(raw, path);
  const kind = isRecord(check) ? CHECK_KEYS.find((key) => key in check) : undefined;
  return kind ? Object.keys(CHECK_SCHEMAS[kind].shape) : [];
}

/** `node "design": ` or `edge "a" → "b": `, naming what a schema problem under `path` is about. */
function subjectOf(raw: unknown, path: readonly Segment[]): string {
  const [list, index] = path;
  if (typeof index !== "number") return "";
  const entry = valueAt(raw, [list ?? "", index]);
  if (!isRecord(entry)) return "";
  if (list === "nodes" && typeof entry.id === "string") return `node "${entry.id}": `;
  if (list === "edges" && typeof entry.from === "string" && typeof entry.to === "string") return `edge "${entry.from}" → "${entry.to}": `;
  return "";
}

const CHECK_FORMS = "{artifact: FILE}, {checklist: FILE} or {command: [PROGRAM, ARG…]}";

/** The problems of a value that matched no kind of check: which kind it meant, and what is wrong with it. */
function checkProblems(raw: unknown, path: readonly Segment[]): GraphProblem[] {
  const check = valueAt(raw, path);
  const subject = subjectOf(raw, path);
  if (!isRecord(check)) return [{ path, message: `${subject}a check is a mapping: ${CHECK_FORMS}` }];
  const kinds = CHECK_KEYS.filter((key) => key in check);
  const [kind, other] = kinds;
  if (kind === undefined) {
    const named = Object.keys(check)[0] ?? "";
    return [{ path, message: `${subject}unknown check "${named}"; a check is ${CHECK_FORMS}` }];
  }
  if (other !== undefined) {
    return [{ path, message: `${subject}one check has one kind, not ${kinds.join(" and ")}: write ${kinds.length} checks` }];
  }
  const result = CHECK_SCHEMAS[kind].safeParse(check);
  return result.success ? [] : schemaProblems(raw, result.error.issues, path);
}

function schemaProblems(raw: unknown, issues: readonly z.core.$ZodIssue[], prefix: readonly Segment[] = []): GraphProblem[] {
  return issues.flatMap((issue): GraphProblem[] => {
    const path = [...prefix, ...issue.path.filter((segment): segment is Segment => typeof segment !== "symbol")];
    if (issue.code === "invalid_union") return checkProblems(raw, path);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        path: [...path, key],
        message: `${subjectOf(raw, path)}unknown key "${key}"; ${suggestion(key, knownKeysAt(raw, path), "keys here")}`,
      }));
    }
    return [{ path, message: subjectOf(raw, path) + issue.message.replace(/^Invalid input: /, "") }];
  });
}

function byPosition(a: LocatedGraphProblem, b: LocatedGraphProblem): number {
  return (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER) || (a.column ?? 0) - (b.column ?? 0);
}

/** Validates and compiles a graph file's text, collecting every problem rather than stopping at the first. */
export function parseGraphText(text: string, options: GraphParseOptions): GraphParseOutcome {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const locate = (problem: GraphProblem): LocatedGraphProblem => {
    const offset = offsetOf(doc, problem.path);
    if (offset === undefined) return problem;
    const { line, col } = lineCounter.linePos(offset);
    return { ...problem, line, column: col };
  };
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { path: [], message: `YAML syntax: ${error.message.split("\n")[0] ?? error.code}`, line, column: col };
      }),
    };
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return { problems: [{ path: [], message: `YAML: ${(error as Error).message}` }] };
  }
  if (!isRecord(raw)) {
    return { problems: [locate({ path: [], message: "a graph file is a mapping with name, start, nodes and edges (docs/graph.md)" })] };
  }
  const problems: GraphProblem[] = [];
  if (options.expectedName !== undefined && typeof raw.name === "string" && raw.name !== options.expectedName) {
    problems.push({
      path: ["name"],
      message: `the file names the graph "${raw.name}", but ${options.namedBy ?? "the config"} calls it "${options.expectedName}"; make them the same`,
    });
  }
  const result = graphFileSchema.safeParse(raw);
  if (!result.success) {
    problems.push(...schemaProblems(raw, result.error.issues));
    return { problems: problems.map(locate).sort(byPosition) };
  }
  const compiled = compileGraph(result.data, options.source);
  problems.push(...compiled.problems);
  if (problems.length > 0 || !compiled.graph) return { problems: problems.map(locate).sort(byPosition) };
  return { graph: compiled.graph, problems: [] };
}

/** A path as short as it can be said from the current directory. */
export function displayPath(path: string, cwd: string = process.cwd()): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") ? rel : path;
}

export interface GraphFileOutcome {
  readonly graph?: Graph;
  /** Every problem, formatted: `file:line:col: key: message`. */
  readonly problems: readonly string[];
}

/** Reads, validates and compiles the graph file at `path` (absolute); its problems, formatted, rather than a throw. */
export async function readGraphFile(path: string, options: GraphParseOptions): Promise<GraphFileOutcome> {
  const shown = displayPath(path);
  let text: string;
  try {
    text = await fs.readFile(path, "utf8");
  } catch (error) {
    const code = errnoOf(error);
    const named = options.namedBy ? ` (named by ${options.namedBy})` : "";
    const why =
      code === "ENOENT"
        ? "it does not exist"
        : code === "EACCES" || code === "EPERM"
          ? "permission denied; fix its permissions"
          : code === "EISDIR"
            ? "it is a directory, not a file"
            : (code ?? String(error));
    return { problems: [`${shown}: cannot read graph file${named}: ${why}`] };
  }
  const outcome = parseGraphText(text, options);
  if (outcome.graph) return { graph: outcome.graph, problems: [] };
  return { problems: outcome.problems.map((problem) => formatGraphProblem(problem, shown)) };
}

/** The graph at `path`, or a `GraphError` naming the file, the node and the line of every problem. */
export async function loadGraphFile(path: string, options: GraphParseOptions): Promise<Graph> {
  const outcome = await readGraphFile(path, options);
  if (!outcome.graph) throw new GraphError(outcome.problems, [displayPath(path)]);
  return outcome.graph;
}
