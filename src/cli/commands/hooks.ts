import { dirname } from "node:path";
import { EXIT_FAILURE, ExitError } from "../../errors.js";
import type { HookEntry } from "../../hooks/declaration.js";
import type { DecisionSpec, FieldSpec, HookPoint } from "../../sdk/hooks/catalog.js";
import { LOOP_CONTEXT_FIELDS } from "../../sdk/hooks/loop-catalog.js";
import type { LoopPoint } from "../../sdk/hooks/loop-catalog.js";
import { HOOK_FAMILIES, HOOK_POINT_NAMES, pointsOfFamily } from "../../sdk/hooks/points.js";
import type { HookFamily } from "../../sdk/hooks/points.js";
import { ConfigError } from "../../config/load.js";
import type { LoadedConfig } from "../../config/load.js";
import { displayPath, loadCommandConfig, printConfigWarnings } from "../context.js";
import type { GlobalOptions } from "../context.js";
import { formatTable, stdout } from "../output.js";
import { HELP_WIDTH } from "../commander.js";

export interface HooksOptions {
  readonly json: boolean;
}

export interface HookPointsOptions extends HooksOptions {
  /** One family only; undefined: both, grouped. */
  readonly family?: HookFamily;
}

/** One entry as `the-loop hooks --json` prints it: where the code is and when it runs, no secret. */
export interface HookListing {
  readonly name: string;
  readonly kind: HookEntry["kind"];
  /** As written in the config: the specifier, the path or the URL. */
  readonly target: string;
  /** `path` entries: the file the daemon would import; `command` entries: the program it would run, when a path. */
  readonly resolved?: string;
  /** `command` entries: the argv, its first word resolved. */
  readonly command?: readonly string[];
  /** `command` entries: the NAMES of the variables passed to it; no value is read here. */
  readonly env?: readonly string[];
  /** The entry's `on`; null for the default (every point a local executor overrides, every point for a remote one). */
  readonly points: readonly string[] | null;
  readonly required: boolean;
  readonly enabled: boolean;
  readonly executor?: string;
  /** The NAME of the variable the bearer token is read from; its value is never read here. */
  readonly tokenEnv?: string;
  readonly timeoutSeconds?: number;
  /** Header names only: a value may still be something the operator would rather not print. */
  readonly headers: readonly string[];
}

const DOCS = "docs/hooks.md";

export function listingOf(entry: HookEntry): HookListing {
  const common = { name: entry.name, kind: entry.kind, target: entry.target };
  const when = { points: entry.on ?? null, required: entry.required, enabled: entry.enabled };
  if (entry.kind === "command") {
    const program = entry.argv[0] ?? entry.target;
    return {
      ...common,
      ...(program !== entry.target ? { resolved: program } : {}),
      ...when,
      command: entry.argv,
      env: entry.env,
      timeoutSeconds: entry.timeoutSeconds,
      headers: [],
    };
  }
  if (entry.kind === "url") {
    return {
      ...common,
      ...when,
      ...(entry.tokenEnv !== undefined ? { tokenEnv: entry.tokenEnv } : {}),
      timeoutSeconds: entry.timeoutSeconds,
      headers: Object.keys(entry.headers),
    };
  }
  return {
    ...common,
    ...(entry.kind === "path" ? { resolved: entry.resolved } : {}),
    ...when,
    ...(entry.executor !== undefined ? { executor: entry.executor } : {}),
    headers: [],
  };
}

function pointsCell(listing: HookListing): string {
  if (listing.points !== null) return listing.points.length > 0 ? listing.points.join(", ") : "none";
  return listing.kind === "url" || listing.kind === "command" ? "all" : "default: every point it overrides";
}

function targetCell(listing: HookListing): string {
  if (listing.command !== undefined) return JSON.stringify(listing.command);
  if (listing.resolved !== undefined && listing.resolved !== listing.target) return `${listing.target} (resolves to ${listing.resolved})`;
  if (listing.tokenEnv !== undefined) return `${listing.target} (bearer token from $${listing.tokenEnv})`;
  return listing.target;
}

const yesNo = (value: boolean): string => (value ? "yes" : "no");

/**
 * The config the declaration is in. A config that does not load (missing, unparseable, invalid
 * anywhere) is a declaration that cannot be read: exit 1 like a bad entry (docs/hooks.md#the-loop-hooks-and-the-loop-hooks-points), so a script
 * tells "listed" from "could not list" by one code.
 */
async function readConfig(globals: GlobalOptions): Promise<LoadedConfig> {
  try {
    return await loadCommandConfig(globals);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ExitError(`cannot read the hooks declaration: ${error.message}`, EXIT_FAILURE, "config", error.details);
  }
}

/**
 * The declaration loaded as the daemon will load it, in a child process (hooks/probe.ts): a module
 * that does not import or construct, or a command with no program, fails the listing with the
 * daemon's error, instead of being listed as fine and refusing the start.
 */
async function checkLoads(file: string, raw: unknown): Promise<void> {
  const { HOOK_LOAD_FIX, checkHooksLoad } = await import("../../hooks/probe.js");
  const result = await checkHooksLoad({ raw, configDir: dirname(file), configPath: file });
  if (result.ok) return;
  throw new ExitError(`the hooks declared in ${displayPath(file)} do not load: ${result.message}; ${HOOK_LOAD_FIX}`, EXIT_FAILURE, "config");
}

/**
 * `the-loop hooks`: what the `hooks:` declaration would run, and where. The declaration is loaded
 * as a daemon would load it, away from this process (checkLoads); no hook point is run and no URL
 * is contacted, so an operator can check a declaration before any daemon loads it.
 */
export async function runHooksList(globals: GlobalOptions, options: HooksOptions): Promise<void> {
  const loaded = await readConfig(globals);
  printConfigWarnings(loaded);
  const file = loaded.source.path;
  // The declaration module pulls in zod; `hooks points` does without it.
  const { HookDeclarationError, parseHookDeclaration } = await import("../../hooks/declaration.js");
  let entries: HookEntry[] = [];
  if (file !== null) {
    try {
      entries = parseHookDeclaration(loaded.config.hooks, { configDir: dirname(file), points: HOOK_POINT_NAMES });
    } catch (error) {
      if (!(error instanceof HookDeclarationError)) throw error;
      throw new ExitError(`cannot read the hooks declaration in ${displayPath(file)}: ${error.message}`, EXIT_FAILURE, "config");
    }
  }
  if (file !== null && entries.some((entry) => entry.enabled)) await checkLoads(file, loaded.config.hooks);
  const listings = entries.map(listingOf);
  if (options.json) {
    stdout.json(listings);
    return;
  }
  if (listings.length === 0) {
    const where = file === null ? "no config file, so no hooks" : `no hooks declared in ${displayPath(file)}`;
    stdout.line(`${where}; ${DOCS} shows how to declare one`);
    return;
  }
  const rows = listings.map((listing) => [
    listing.name,
    listing.kind,
    pointsCell(listing),
    yesNo(listing.required),
    yesNo(listing.enabled),
    targetCell(listing),
  ]);
  stdout.line(formatTable(["name", "kind", "points", "required", "enabled", "target"], rows));
}

const LABEL_WIDTH = "  decisions: ".length;

/**
 * `tokens` (joined by spaces) on lines no wider than `width`, the first starting with `label`
 * padded to the column, the rest indented `more` past it, so long catalog text stays readable in a
 * terminal and a wrapped line is told apart from the next item.
 */
function hanging(label: string, tokens: readonly string[], more = 0, width: number = HELP_WIDTH): string[] {
  const lines: string[] = [];
  let line = label.padEnd(LABEL_WIDTH);
  let empty = true;
  for (const token of tokens) {
    if (!empty && line.length + 1 + token.length > width) {
      lines.push(line);
      line = " ".repeat(LABEL_WIDTH + more);
      empty = true;
    }
    line += empty ? token : ` ${token}`;
    empty = false;
  }
  lines.push(line.trimEnd());
  return lines;
}

const words = (text: string): string[] => text.split(/\s+/).filter((word) => word !== "");

/**
 * A field's kind, and whether it may be missing: `or null` for a lifecycle fact sent as null, and
 * `optional` for a key omitted where it has no value (agh's `omitempty`), so a hook author knows
 * which keys to test for before reading them.
 */
const kindOf = (spec: FieldSpec): string => (spec.nullable === true ? `${spec.kind} or null` : spec.optional === true ? `${spec.kind}, optional` : spec.kind);

/** One field per item: `name: kind — description`, and for a decision how it applies. */
function describeFields(label: string, fields: readonly [string, FieldSpec | DecisionSpec][]): string[] {
  return fields.flatMap(([name, spec], index) =>
    hanging(index === 0 ? label : "", [`${name}: ${kindOf(spec)}`, "—", ...words(spec.description), ...("applies" in spec ? words(spec.applies) : [])], 2),
  );
}

function isLoopPoint(point: HookPoint): point is LoopPoint {
  return point.family === "loop";
}

function describePoint(point: HookPoint): string[] {
  const lines = [stdout.paint("bold", point.name)];
  lines.push(...hanging("  what:", words(point.description)));
  lines.push(...hanging("  method:", [point.method]));
  lines.push(...hanging("  fires:", words(point.fires)));
  if (isLoopPoint(point)) {
    lines.push(...hanging("  denies:", words(point.canDeny ? "yes: synchronous, the run waits for the answer" : "no: observe-only, off the run's path")));
    if (point.optIn) lines.push(...hanging("  opt-in:", words("yes: only an entry whose on names it runs here")));
    // The loop context is the same at every event: listed once, above the family's events.
    const own = Object.entries(point.facts).filter(([name]) => !LOOP_CONTEXT_FIELDS.includes(name));
    lines.push(...hanging("  facts:", words("the loop context, then:")));
    lines.push(...describeFields("", own));
  } else {
    lines.push(...describeFields("  facts:", Object.entries(point.facts)));
  }
  const decisions = Object.entries(point.decisions);
  if (decisions.length === 0) {
    lines.push(...hanging("  decisions:", words("none (observation only)")));
    return lines;
  }
  lines.push(...describeFields("  decisions:", decisions));
  return lines;
}

/** The fields every loop event carries, described once for the family. */
function describeLoopContext(): string[] {
  const [first] = pointsOfFamily("loop");
  if (first === undefined) return [];
  const shared = Object.entries(first.facts).filter(([name]) => LOOP_CONTEXT_FIELDS.includes(name));
  return [
    stdout.paint("bold", "the loop context"),
    ...hanging(
      "  what:",
      words(
        "The keys every loop event's payload starts with. A key marked optional is omitted where it has no value (agh's omitempty), never null; the others are always present.",
      ),
    ),
    ...describeFields("  facts:", shared),
  ];
}

const FAMILY_HEADINGS: Readonly<Record<HookFamily, string>> = {
  lifecycle: "Lifecycle points: an entry without on runs at each it handles.",
  loop: "Loop events: only an entry whose on names one runs there; fail-open.",
};

/**
 * `the-loop hooks points`: the catalog a declaration's `on` names and an executor implements;
 * `--family` keeps one family. `--json` prints the points as the SDK exports them, in one list.
 */
export function runHooksPoints(options: HookPointsOptions): void {
  const families = options.family === undefined ? HOOK_FAMILIES : [options.family];
  if (options.json) {
    stdout.json(families.flatMap((family) => pointsOfFamily(family)));
    return;
  }
  const sections = families.map((family) => {
    const blocks = pointsOfFamily(family).map((point) => describePoint(point).join("\n"));
    if (family === "loop") blocks.unshift(describeLoopContext().join("\n"));
    const heading = families.length > 1 ? `${stdout.paint("bold", `== ${FAMILY_HEADINGS[family]}`)}\n\n` : "";
    return `${heading}${blocks.join("\n\n")}`;
  });
  stdout.line(sections.join("\n\n"));
  stdout.line("");
  stdout.line("A point's name is what `on` lists and a remote executor's JSON-RPC method;");
  stdout.line(`"method" is what a LifecycleHooks subclass overrides (LoopHooks for loop.*).`);
  stdout.line(`See ${DOCS}.`);
}
