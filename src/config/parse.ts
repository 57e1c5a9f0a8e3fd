import { LineCounter, isMap, isPair, isScalar, isSeq, parseDocument } from "yaml";
import type { Document, Node } from "yaml";
import type { z } from "zod";
import { configJsonSchema, schemaNodeAt } from "./json-schema.js";
import type { ConfigProblem } from "./problem.js";
import { configSchema } from "./schema.js";
import type { CliConfig } from "./schema.js";
import { closestName } from "./suggest.js";

/**
 * Config text → config: YAML with a line counter, older spellings normalized (with warnings),
 * then validation, every problem mapped back to the line where it stands. Loaded only when a
 * config file exists, so a run on the defaults never loads the YAML parser.
 */

type Segment = string | number;

function keyOf(pair: unknown): unknown {
  return isPair(pair) && isScalar(pair.key) ? pair.key.value : isPair(pair) ? pair.key : undefined;
}

/** The start offset of the deepest node along `path` that exists: a key where there is one (graph files use it too). */
export function offsetOf(doc: Document, path: readonly Segment[]): number | undefined {
  let node: unknown = doc.contents;
  let offset = (doc.contents as Node | null)?.range?.[0];
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((item) => String(keyOf(item)) === String(segment));
      if (!pair) break;
      offset = (pair.key as Node | null)?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset;
}

export function formatPath(path: readonly Segment[]): string {
  return path.reduce<string>((text, segment) => (typeof segment === "number" ? `${text}[${segment}]` : text ? `${text}.${segment}` : segment), "");
}

function unknownKeyMessage(parent: readonly Segment[], key: string): string {
  const known = Object.keys(schemaNodeAt(configJsonSchema(), parent)?.properties ?? {});
  const close = closestName(key, known, { ignoreCase: true });
  const hint = close ? `; did you mean "${close}"?` : known.length ? `; known keys here: ${known.join(", ")}` : "";
  return `unknown key${hint}`;
}

export interface ParseOutcome {
  readonly config?: CliConfig;
  readonly problems: readonly ConfigProblem[];
  readonly warnings: readonly ConfigProblem[];
}

/** Validates a config text completely, collecting every problem rather than stopping at the first. */
export function parseConfigText(text: string): ParseOutcome {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const at = (path: readonly Segment[], documentPath: readonly Segment[] = path): Pick<ConfigProblem, "line" | "column"> => {
    const offset = offsetOf(doc, documentPath);
    if (offset === undefined) return {};
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { path: "", message: `YAML syntax: ${error.message.split("\n")[0] ?? error.code}`, line, column: col };
      }),
      warnings: [],
    };
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (error) {
    return { problems: [{ path: "", message: `YAML: ${(error as Error).message}` }], warnings: [] };
  }
  if (!isMapping(raw)) {
    return { problems: [{ path: "", message: "the config must be a mapping of keys to values", ...at([]) }], warnings: [] };
  }

  const problems: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const input = structuredClone(raw);
  // Where a key of the normalized input was written in the document, when that differs.
  let documentPathOf = (path: readonly Segment[]): readonly Segment[] => path;

  const webhooks = input.webhooks;
  const ghWebhook = isMapping(webhooks) && isMapping(webhooks.ghWebhook) ? webhooks.ghWebhook : undefined;
  if (ghWebhook !== undefined && "routing" in ghWebhook) {
    const legacy = ["webhooks", "ghWebhook", "routing"];
    if ("routing" in input) {
      problems.push({
        path: formatPath(legacy),
        message: `routing is set both at the top level (line ${at(["routing"]).line ?? "?"}) and here; keep only the top-level block`,
        ...at(legacy),
      });
    } else {
      input.routing = ghWebhook.routing;
      delete ghWebhook.routing;
      documentPathOf = (path) => (path[0] === "routing" ? [...legacy, ...path.slice(1)] : path);
      warnings.push({
        path: formatPath(legacy),
        message: "this is the older spelling of the top-level `routing` block; it is read as `routing`. Move it to the top level.",
        ...at(legacy),
      });
    }
  }

  const result = configSchema.safeParse(input);
  if (!result.success) {
    for (const issue of result.error.issues as z.core.$ZodIssue[]) {
      const path = issue.path.filter((segment): segment is Segment => typeof segment !== "symbol");
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          const keyPath = [...path, key];
          problems.push({
            path: formatPath(documentPathOf(keyPath)),
            message: unknownKeyMessage(path, key),
            ...at(keyPath, documentPathOf(keyPath)),
          });
        }
      } else {
        problems.push({
          path: formatPath(documentPathOf(path)),
          message: issue.message.replace(/^Invalid input: /, ""),
          ...at(path, documentPathOf(path)),
        });
      }
    }
  }
  if (problems.length > 0 || !result.success) return { problems, warnings };

  const config = result.data;
  return {
    config: {
      ...config,
      integrations: {
        ...config.integrations,
        local: { ...config.integrations.local, project: config.integrations.local.project.toLowerCase() },
      },
    },
    problems,
    warnings,
  };
}

/** A YAML mapping as `toJS` gives it: keys to values of any kind, each checked by the schema. */
function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
