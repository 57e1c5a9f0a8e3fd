import { isAbsolute } from "node:path";
import { parseDocument } from "yaml";
import { firstArtifact, readChecklist, rootOf, runChecks } from "../graph-run/checks.js";
import type { Root } from "../graph-run/checks.js";
import type { GraphCheck } from "../graph/types.js";
import { clip, stripControlCharacters } from "../subprocess/index.js";
import { fieldPath, predicateSchema } from "./manifest.js";
import type { GatePredicate } from "./manifest.js";

/**
 * The predicate evaluator: a gate's `check.predicate` answered as `{block, message}`, the shape a
 * gate's `query` command prints, so whoever dispatches gates reads both the same way.
 *
 * The files and commands a predicate names live in the session's working directory, which the
 * agent writes, so the graph's checks judge them (src/graph-run/checks.ts): an artifact counts only
 * as a regular file inside the directory, never through `..` or a symlink leading out, and every
 * answer names what is missing.
 *
 * A verdict is `ok` whenever the predicate could be evaluated — a missing file, a command that
 * failed, timed out or was not found all *block*, with the reason. Only a predicate that cannot be
 * evaluated at all is an error: malformed, of an unknown kind, a working directory that is not
 * there, or an evaluation stopped by its caller. An error is routed by the gate's `onError`; a
 * block is decided by its `blocking`.
 */

export type PredicateVerdict = { readonly ok: true; readonly block: boolean; readonly message: string } | { readonly ok: false; readonly error: string };

export interface EvaluatePredicateOptions {
  /** The session's working directory (absolute): artifacts resolve against it, commands run in it. */
  readonly cwd: string;
  /** Exactly the environment a `command-exit-zero` command gets (see `allowListedEnv`). */
  readonly env: Readonly<Record<string, string>>;
  /** How long a `command-exit-zero` command may run; `PREDICATE_COMMAND_TIMEOUT_MS` unless given. */
  readonly timeoutMs?: number;
  /** Aborting stops a running command; the evaluation then answers an error, not a verdict. */
  readonly signal?: AbortSignal;
}

/** How long a `command-exit-zero` command runs unless the caller says otherwise. */
export const PREDICATE_COMMAND_TIMEOUT_MS = 10 * 60 * 1000;

/** The kinds the evaluator knows, in the schema's order. */
export const PREDICATE_KINDS: readonly string[] = predicateSchema.options.map((option) => option.shape.kind.value);

const SHOWN_MAX_CHARS = 80;

const isMapping = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The predicate in `raw`, or why it cannot be evaluated (naming the field). */
export function parsePredicate(raw: unknown): GatePredicate | string {
  if (!isMapping(raw)) return `a predicate is a JSON object {"kind": …}; the known kinds: ${PREDICATE_KINDS.join(", ")}`;
  const { kind } = raw;
  if (kind === undefined) return `the predicate has no "kind"; the known kinds: ${PREDICATE_KINDS.join(", ")}`;
  if (typeof kind !== "string" || !PREDICATE_KINDS.includes(kind)) {
    return `unknown predicate kind ${shown(kind)}; the known kinds: ${PREDICATE_KINDS.join(", ")}`;
  }
  const parsed = predicateSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${fieldPath(["predicate", ...issue.path])}: ${issue.message}`);
    return `the ${kind} predicate is malformed: ${problems.join("; ")}`;
  }
  // No program, file or key can hold a NUL byte: such a predicate is malformed, not unmet.
  const strings = [...Object.values(parsed.data), ...(parsed.data.kind === "command-exit-zero" ? parsed.data.argv : [])];
  if (strings.some((value) => typeof value === "string" && value.includes("\0")))
    return `the ${kind} predicate holds a NUL byte, which no path, field or argument can`;
  return parsed.data;
}

/** Evaluates `predicate` (as read from JSON) in `options.cwd`. See the module comment for verdict versus error. */
export async function evaluatePredicate(predicate: unknown, options: EvaluatePredicateOptions): Promise<PredicateVerdict> {
  const parsed = parsePredicate(predicate);
  if (typeof parsed === "string") return { ok: false, error: parsed };
  if (!isAbsolute(options.cwd)) return { ok: false, error: `a predicate is evaluated in an absolute working directory, not ${shown(options.cwd)}` };
  const root = await rootOf(options.cwd);
  if (typeof root === "string") return { ok: false, error: `${root}: the predicate cannot be evaluated there` };
  const stopped = (): PredicateVerdict => ({ ok: false, error: "the predicate's evaluation was stopped before it answered" });
  if (options.signal?.aborted) return stopped();

  if (parsed.kind === "artifact-frontmatter-equals") return frontMatterEquals(root, parsed);
  const check: GraphCheck =
    parsed.kind === "command-exit-zero"
      ? { kind: "command", argv: parsed.argv, timeoutSeconds: (options.timeoutMs ?? PREDICATE_COMMAND_TIMEOUT_MS) / 1000 }
      : { kind: parsed.kind, anyOf: [parsed.artifact] };
  const [result] = await runChecks([check], { cwd: options.cwd, env: options.env, ...(options.signal ? { signal: options.signal } : {}) });
  if (options.signal?.aborted) return stopped();
  if (result === undefined) return { ok: false, error: "the predicate's check gave no answer" };
  return { ok: true, block: !result.passed, message: result.message };
}

/** A value from the predicate or the file, cleaned and short, quoted when it is a string. */
function shown(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return clip(stripControlCharacters(text), SHOWN_MAX_CHARS);
}

/** A front-matter value as a message names it, with its type: the string "false" is not the boolean false. */
function described(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return `the ${typeof value} ${shown(value)}`;
  return `a ${typeof value}`;
}

const FRONT_MATTER_OPEN = /^---[ \t]*$/;
const FRONT_MATTER_CLOSE = /^(?:---|\.\.\.)[ \t]*$/;

/**
 * The YAML between a leading `---` line and the next `---` (or `...`) line, or why there is none.
 * Only the file's first line may open it: a `---` further down is a Markdown rule.
 */
export function frontMatterOf(text: string): { readonly yaml: string } | { readonly problem: "none" | "unclosed" } {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (!FRONT_MATTER_OPEN.test(lines[0] ?? "")) return { problem: "none" };
  const end = lines.findIndex((line, index) => index > 0 && FRONT_MATTER_CLOSE.test(line));
  if (end === -1) return { problem: "unclosed" };
  return { yaml: lines.slice(1, end).join("\n") };
}

/**
 * The value `field` names in `data`: a top-level key as written, or — when there is no such key
 * and the field has dots — the path of nested keys (`review.status` is `status` inside `review`).
 * Only a mapping's own keys count, so `constructor` or `__proto__` never find anything inherited.
 */
export function frontMatterField(data: Record<string, unknown>, field: string): { readonly found: true; readonly value: unknown } | { readonly found: false } {
  if (Object.hasOwn(data, field)) return { found: true, value: data[field] };
  if (!field.includes(".")) return { found: false };
  let current: unknown = data;
  for (const key of field.split(".")) {
    if (!isMapping(current) || !Object.hasOwn(current, key)) return { found: false };
    current = current[key];
  }
  return { found: true, value: current };
}

async function frontMatterEquals(root: Root, predicate: Extract<GatePredicate, { kind: "artifact-frontmatter-equals" }>): Promise<PredicateVerdict> {
  const block = (message: string): PredicateVerdict => ({ ok: true, block: true, message });
  const found = await firstArtifact(root, [predicate.artifact]);
  if (typeof found === "string") return block(found);
  const name = found.shown;
  const text = await readChecklist(found.real);
  if (text === "too-large") return block(`${name} is too large to read its front matter`);
  if (text === undefined) return block(`${name} cannot be read as a regular file`);
  const front = frontMatterOf(text);
  if ("problem" in front) {
    return block(
      front.problem === "none"
        ? `${name} has no front matter (YAML between a first line "---" and a closing "---")`
        : `${name}'s front matter is not closed (no "---" line after the first)`,
    );
  }
  const document = parseDocument(front.yaml, { uniqueKeys: true });
  const [problem] = document.errors;
  if (problem !== undefined) return block(`${name}'s front matter is not YAML: ${clip(stripControlCharacters(problem.message.split("\n")[0] ?? ""), 200)}`);
  let data: unknown;
  try {
    data = document.toJS();
  } catch (error) {
    return block(`${name}'s front matter cannot be read: ${clip(stripControlCharacters((error as Error).message), 200)}`);
  }
  const field = shown(predicate.field);
  if (!isMapping(data)) return block(`${name}'s front matter is not a mapping of fields, so it has no field ${field}`);
  const value = frontMatterField(data, predicate.field);
  if (!value.found) return block(`${name} has no field ${field} in its front matter (wanted ${described(predicate.equals)})`);
  // Strict: the string "false" is not the boolean false, nor is "1" the number 1.
  if (value.value !== predicate.equals) return block(`${name}: ${field} is ${described(value.value)}, not ${described(predicate.equals)}`);
  return { ok: true, block: false, message: `${name}: ${field} is ${described(predicate.equals)}` };
}
