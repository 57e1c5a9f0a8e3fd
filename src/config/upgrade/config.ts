import { promises as fs } from "node:fs";
import { dirname } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { Document, isMap, isScalar, parseDocument } from "yaml";
import type { Node, YAMLMap } from "yaml";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../../errors.js";
import { resolvePollStateFile } from "../../state/poll-state-file.js";
import { fsyncDirectory } from "../../state/atomic.js";
import type { StatePaths } from "../../state/layout.js";
import { ConfigError } from "../load.js";
import { formatPath, parseConfigText } from "../parse.js";
import { formatProblem } from "../problem.js";
import { controlSchema, stateSchema } from "../schema.js";
import { CLOSE_AFTER_COMMENT, CLOSE_AFTER_KEY, CLOSE_AFTER_WHY, graphDefaults, graphOn } from "./graph.js";
import { mcpDefaults } from "./mcp.js";
import { SWITCH_COMMENTS, supervisionDefaults, switchDecisions } from "./supervision.js";

/**
 * `the-loop upgrade-config`, as functions over text and data: what an existing config needs to
 * carry the keys execution control added (docs/control.md#upgrading), and the offered move of a
 * pre-state-root poll-state file.
 *
 * Every key added carries its default, so an upgraded config means exactly what it meant before;
 * the upgrade only makes the defaults visible, where the operator can read and change them. The
 * new keys are spliced into the original text at the end of the mapping they belong to (located
 * through the yaml Document's node ranges, rendered through a yaml Document of their own), so
 * every byte outside the inserted lines — comments, key order, quoting, explicitly configured
 * paths — stays as it was. The result is parsed again and must validate to the same config.
 */

export type ConfigPath = readonly string[];

export const TOP_LEVEL_ROUTING: ConfigPath = ["routing"];
/** The older spelling of the routing block, still read (with a warning). */
export const LEGACY_ROUTING: ConfigPath = ["webhooks", "ghWebhook", "routing"];

/** A setting added whose default changes behaviour: the operator should choose it knowingly. */
export interface DecisionNeeded {
  /** Where the key stands in the file, e.g. `routing.control.requireStartCommand`. */
  readonly key: string;
  readonly why: string;
}

/** Text inserted into the original, for a diff-like preview. */
export interface ConfigInsertion {
  /** The 1-based line of the original text the insertion follows (0: before the first line). */
  readonly afterLine: number;
  readonly text: string;
}

export interface ConfigUpgrade {
  /** The upgraded text; the original when nothing was missing. */
  readonly text: string;
  readonly changed: boolean;
  /** Every key added, as a dotted path where it stands in the file, in file order. */
  readonly added: readonly string[];
  readonly needsDecision: readonly DecisionNeeded[];
  readonly insertions: readonly ConfigInsertion[];
  /** The routing block the file uses (the top-level one when the file has none yet). */
  readonly routingPath: ConfigPath;
}

type Defaults = { readonly [key: string]: string | number | boolean | Defaults };

/** The keys an upgrade makes explicit, with their defaults (from the schema, the one source of truth). */
function stateDefaults(): Defaults {
  return { root: stateSchema.parse({}).root };
}

function controlDefaults(): Defaults {
  const control = controlSchema.parse({});
  return { enabled: control.enabled, requireStartCommand: control.requireStartCommand, keywords: { ...control.keywords } };
}

/** What an upgrade adds to the routing block: execution control, and the switch of the-loop's MCP server. */
function routingDefaults(): Defaults {
  return { control: controlDefaults(), mcp: mcpDefaults(), supervision: supervisionDefaults() };
}

/** Comments placed above inserted keys, by the key's path relative to the config's blocks. */
function commentFor(path: ConfigPath, routingPath: ConfigPath): string | undefined {
  const at = formatPath(path);
  if (at === "state") return " Everything the-loop generates lives under this folder (added by `the-loop upgrade-config`).";
  if (at === CLOSE_AFTER_KEY) return CLOSE_AFTER_COMMENT;
  for (const [block, comment] of SWITCH_COMMENTS) if (at === formatPath([...routingPath, block])) return comment;
  if (at === formatPath([...routingPath, "control"])) {
    return (
      " Execution control (added by `the-loop upgrade-config`): authorized people start, stop, pause\n" +
      " and resume sessions with these comment keywords or `the-loop sessions start|stop|pause|resume`."
    );
  }
  if (at === formatPath([...routingPath, "control", "requireStartCommand"])) {
    return (
      " true: the label only arms a work item; a session starts once an authorized person comments\n" +
      " the start keyword or runs `the-loop sessions start`. false: the label alone starts it."
    );
  }
  return undefined;
}

function requireStartWhy(startKeyword: string, controlEnabled: boolean): string {
  const base =
    `its default changes behaviour: labelling a work item no longer starts a session, it only arms it; a session ` +
    `starts when an authorized person comments ${startKeyword} on it or runs \`the-loop sessions start --work-item REF\`. ` +
    "Set it to false to keep starting sessions on the label alone.";
  return controlEnabled ? base : `${base} (No effect while routing.control.enabled is false.)`;
}

// ---------------------------------------------------------------------------------------------
// Locating mappings in the text

interface Line {
  readonly start: number;
  /** Offset just past the line's newline (or the end of the text). */
  readonly next: number;
  readonly indent: number;
  readonly blank: boolean;
  readonly comment: boolean;
}

function linesOf(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf("\n", start);
    const next = newline === -1 ? text.length : newline + 1;
    const content = text.slice(start, newline === -1 ? text.length : newline).replace(/\r$/, "");
    const trimmed = content.trimStart();
    lines.push({
      start,
      next,
      indent: content.length - trimmed.length,
      blank: trimmed === "",
      comment: trimmed.startsWith("#"),
    });
    start = next;
  }
  return lines;
}

function columnOf(text: string, offset: number): number {
  return offset - (text.lastIndexOf("\n", offset - 1) + 1);
}

/** The number of lines that start before `offset`: the line an insertion there follows. */
function lineNumberAt(text: string, offset: number): number {
  let count = 0;
  for (let index = text.indexOf("\n"); index !== -1 && index < offset; index = text.indexOf("\n", index + 1)) count += 1;
  return offset > 0 && text[offset - 1] !== "\n" ? count + 1 : count;
}

function keyName(pair: unknown): string | undefined {
  const key = (pair as { key?: unknown }).key;
  return isScalar(key) ? String(key.value) : undefined;
}

function pairOf(map: YAMLMap, key: string) {
  return map.items.find((pair) => keyName(pair) === key);
}

function firstKeyOffset(map: YAMLMap): number | undefined {
  const key = map.items[0]?.key as Node | null | undefined;
  return key?.range?.[0];
}

/** Where new keys go in a block mapping: after its last line of content and the comments indented with it. */
function blockInsertionOffset(text: string, map: YAMLMap): { offset: number; column: number } | undefined {
  const first = firstKeyOffset(map);
  if (first === undefined) return undefined;
  const column = columnOf(text, first);
  const lines = linesOf(text);
  let index = lines.findIndex((line) => line.start <= first && first < line.next);
  if (index === -1) return undefined;
  // The mapping runs until the first line of content indented less than its keys (or a document marker).
  let end = index + 1;
  for (; end < lines.length; end++) {
    const line = lines[end] as Line;
    if (line.blank || line.comment) continue;
    const content = text.slice(line.start, line.start + 3);
    if (line.indent < column || (line.indent === 0 && (content === "---" || content === "..."))) break;
  }
  // Trailing blank lines, and comments indented less than the keys, belong to what follows.
  let last = end;
  while (last > index + 1) {
    const line = lines[last - 1] as Line;
    if (line.blank || (line.comment && line.indent < column)) last -= 1;
    else break;
  }
  index = last - 1;
  // Unless they are the value of a block scalar that keeps them (`|+`, `>+`) and ends the mapping:
  // text inserted before them would take them out of that value.
  const kept = lastScalarEnd(map);
  if (kept !== undefined && kept > (lines[index] as Line).next) {
    const line = lines.findIndex((candidate) => candidate.start < kept && kept <= candidate.next);
    if (line > index) index = line;
  }
  return { offset: (lines[index] as Line).next, column };
}

/** Where the scalar that ends a block mapping (however deep) ends, trailing blank lines it keeps included. */
function lastScalarEnd(map: YAMLMap): number | undefined {
  const value = map.items[map.items.length - 1]?.value;
  if (isMap(value) && !value.flow) return lastScalarEnd(value);
  return isScalar(value) ? value.range?.[1] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Rendering

interface Edit {
  readonly offset: number;
  /** How deep the mapping written into is: at one offset, deeper insertions go first. */
  readonly depth: number;
  /** Block lines: they must start on a line of their own (and a top-level block after a blank line). */
  readonly block: "nested" | "top-level" | "inline";
  readonly text: string;
  /** The leaf keys the text adds, as dotted paths. */
  readonly keys: readonly string[];
}

interface RenderContext {
  readonly text: string;
  readonly eol: string;
  readonly indentUnit: number;
  readonly routingPath: ConfigPath;
}

function annotate(map: YAMLMap, path: ConfigPath, context: RenderContext): void {
  for (const pair of map.items) {
    const name = keyName(pair);
    if (name === undefined) continue;
    const at = [...path, name];
    const comment = commentFor(at, context.routingPath);
    if (comment !== undefined && isScalar(pair.key)) pair.key.commentBefore = comment;
    if (isMap(pair.value)) annotate(pair.value, at, context);
  }
}

/** `missing` as block YAML at `column`, comments included, each line ending in the file's newline. */
function renderBlock(missing: Defaults, parentPath: ConfigPath, column: number, context: RenderContext): string {
  const doc = new Document(missing);
  if (isMap(doc.contents)) annotate(doc.contents, parentPath, context);
  const rendered = doc.toString({ indent: context.indentUnit, lineWidth: 0 }).replace(/\n$/, "");
  const pad = " ".repeat(column);
  return rendered
    .split("\n")
    .map((line) => (line === "" ? line : pad + line))
    .map((line) => line + context.eol)
    .join("");
}

/** `missing` as the pairs of a flow mapping (`a: 1, b: {c: 2}`), without braces. */
function renderFlowPairs(missing: Defaults): string {
  const doc = new Document(missing);
  if (isMap(doc.contents)) doc.contents.flow = true;
  const rendered = doc.toString({ flowCollectionPadding: false, lineWidth: 0 }).trim();
  return rendered.slice(1, -1);
}

function byHand(path: ConfigPath, missing: Defaults, why: string): ExitError {
  const keys = leafPaths(missing, path).join(", ");
  return new ExitError(
    `cannot add ${keys}: ${formatPath(path)} ${why}; nothing was written. Add the keys by hand (the defaults are in docs/config.md), then run \`the-loop config validate\``,
    EXIT_FAILURE,
    "conflict",
  );
}

function leafPaths(value: Defaults, path: ConfigPath): string[] {
  return Object.entries(value).flatMap(([key, child]) => (typeof child === "object" ? leafPaths(child, [...path, key]) : [formatPath([...path, key])]));
}

/** An edit that adds the `missing` pairs to `map` (at `path`), block or flow. */
function insertInto(map: YAMLMap, path: ConfigPath, missing: Defaults, context: RenderContext): Edit {
  const { text } = context;
  if (map.flow) {
    const close = (map.range?.[1] ?? 0) - 1;
    if (close < 0 || text[close] !== "}") throw byHand(path, missing, "is a flow mapping whose end could not be found");
    // Right after the last pair, so a closing brace on a line of its own keeps its place.
    const offset = text.slice(0, close).trimEnd().length;
    const last = text[offset - 1];
    const separator = last === "{" ? "" : last === "," ? " " : ", ";
    return { offset, depth: path.length, block: "inline", text: separator + renderFlowPairs(missing), keys: leafPaths(missing, path) };
  }
  const at = blockInsertionOffset(text, map);
  if (at === undefined) throw byHand(path, missing, "could not be located in the text");
  const block = path.length === 0 ? "top-level" : "nested";
  return { offset: at.offset, depth: path.length, block, text: renderBlock(missing, path, at.column, context), keys: leafPaths(missing, path) };
}

/**
 * Fills what `defaults` has and `map` lacks, recursing into mappings both have. A value that
 * should be a mapping but is not (an alias, say) cannot be filled safely.
 */
function fill(map: YAMLMap, path: ConfigPath, defaults: Defaults, context: RenderContext, edits: Edit[]): void {
  const missing: Record<string, Defaults[string]> = {};
  for (const [key, value] of Object.entries(defaults)) {
    const pair = pairOf(map, key);
    if (pair === undefined) {
      missing[key] = value;
    } else if (typeof value === "object") {
      if (!isMap(pair.value)) throw byHand([...path, key], value, "is not a plain mapping (an alias?)");
      fill(pair.value, [...path, key], value, context, edits);
    }
  }
  if (Object.keys(missing).length > 0) edits.push(insertInto(map, path, missing, context));
}

/** The indentation step the file uses for nested mappings (2 when it has none). */
function indentUnitOf(text: string, top: YAMLMap): number {
  const topFirst = firstKeyOffset(top);
  if (topFirst === undefined) return 2;
  const topColumn = columnOf(text, topFirst);
  for (const pair of top.items) {
    if (isMap(pair.value) && !pair.value.flow) {
      const first = firstKeyOffset(pair.value);
      if (first !== undefined && columnOf(text, first) > topColumn) return columnOf(text, first) - topColumn;
    }
  }
  return 2;
}

function mapAt(root: YAMLMap, path: ConfigPath): YAMLMap | undefined {
  let node: unknown = root;
  for (const key of path) {
    if (!isMap(node)) return undefined;
    node = pairOf(node, key)?.value;
  }
  return isMap(node) ? node : undefined;
}

function hasKey(root: YAMLMap, path: ConfigPath): boolean {
  const parent = mapAt(root, path.slice(0, -1));
  const last = path[path.length - 1];
  return parent !== undefined && last !== undefined && pairOf(parent, last) !== undefined;
}

/** By offset; at one offset the deeper mapping's keys first (they end it), then in planned order. */
function ordered(edits: readonly Edit[]): Edit[] {
  return edits
    .map((edit, index) => ({ edit, index }))
    .sort((a, b) => a.edit.offset - b.edit.offset || b.edit.depth - a.edit.depth || a.index - b.index)
    .map(({ edit }) => edit);
}

const BLANK_LINE_END = /(?:^|\n)[ \t]*\r?\n$/;

/** Splices the edits in; each block starts on a line of its own, a top-level one after a blank line. */
function apply(text: string, edits: readonly Edit[], eol: string): { text: string; insertions: ConfigInsertion[] } {
  let result = "";
  let from = 0;
  const insertions: ConfigInsertion[] = [];
  let previous: Edit | undefined;
  for (const edit of ordered(edits)) {
    result += text.slice(from, edit.offset);
    from = edit.offset;
    let inserted = "";
    // Two sets of pairs for one flow mapping (an empty top-level `{}` takes state and routing):
    // each was rendered as if it were the only one, so the second needs its comma.
    if (edit.block === "inline" && previous?.block === "inline" && previous.offset === edit.offset && !edit.text.startsWith(",")) {
      inserted += ", ";
    }
    if (edit.block !== "inline") {
      if (result !== "" && !result.endsWith("\n")) inserted += eol;
      if (edit.block === "top-level" && result.trim() !== "" && !BLANK_LINE_END.test(result + inserted)) inserted += eol;
    }
    inserted += edit.text;
    result += inserted;
    insertions.push({ afterLine: lineNumberAt(text, edit.offset), text: inserted });
    previous = edit;
  }
  return { text: result + text.slice(from), insertions };
}

function invalidMessage(text: string, what: string): string[] {
  return parseConfigText(text).problems.map((problem) => formatProblem(problem, what));
}

const BYTE_ORDER_MARK = "\uFEFF";

/**
 * What the upgrade adds to a config text. Throws a ConfigError when the text is not a valid config
 * (fix that first), and refuses (ExitError) rather than produce a text that would not load or
 * would mean something else.
 */
export function upgradeConfigText(original: string, file = "config"): ConfigUpgrade {
  const before = parseConfigText(original);
  if (before.problems.length > 0 || !before.config) {
    throw new ConfigError(
      `${file} is not a valid config, so it cannot be upgraded; fix it first (\`the-loop config validate\` lists the problems)`,
      before.problems.map((problem) => formatProblem(problem, file)),
    );
  }
  // A byte order mark (Windows editors save one) is set aside while the text is edited — it is not
  // a column of the first line — and put back in front of the result.
  const bom = original.startsWith(BYTE_ORDER_MARK) ? BYTE_ORDER_MARK : "";
  const text = original.slice(bom.length);
  const doc = parseDocument(text);
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const top = doc.contents;
  const edits: Edit[] = [];

  let routingPath: ConfigPath = TOP_LEVEL_ROUTING;
  if (!isMap(top)) {
    // An empty document (or one of comments only): everything is appended.
    const everything = { state: stateDefaults(), routing: routingDefaults() };
    const context: RenderContext = { text, eol, indentUnit: 2, routingPath };
    edits.push({
      offset: text.length,
      depth: 0,
      block: "top-level",
      text: renderBlock(everything, [], 0, context),
      keys: leafPaths(everything, []),
    });
  } else {
    if (!hasKey(top, TOP_LEVEL_ROUTING) && hasKey(top, LEGACY_ROUTING)) routingPath = LEGACY_ROUTING;
    const context: RenderContext = { text, eol, indentUnit: indentUnitOf(text, top), routingPath };

    // state: right after `version` when the file declares one, else at the end.
    const statePair = pairOf(top, "state");
    const version = pairOf(top, "version");
    const versionEnd = (version?.value as Node | null | undefined)?.range?.[1];
    if (statePair === undefined && versionEnd !== undefined && !top.flow) {
      const newline = text.indexOf("\n", versionEnd);
      const offset = newline === -1 ? text.length : newline + 1;
      const trail = offset < text.length && !/^[ \t]*\r?\n/.test(text.slice(offset)) ? eol : "";
      const column = columnOf(text, firstKeyOffset(top) ?? 0);
      const state = { state: stateDefaults() };
      edits.push({ offset, depth: 0, block: "top-level", text: renderBlock(state, [], column, context) + trail, keys: leafPaths(state, []) });
    } else {
      fill(top, [], { state: stateDefaults() }, context, edits);
    }

    const routing = mapAt(top, routingPath);
    if (routing) fill(routing, routingPath, routingDefaults(), context, edits);
    else if (hasKey(top, routingPath)) throw byHand(routingPath, routingDefaults(), "is not a plain mapping (an alias?)");
    else fill(top, [], { routing: routingDefaults() }, context, edits);
    const graph = graphOn(top);
    if (graph) fill(graph, ["graph"], graphDefaults(), context, edits);
  }

  if (edits.length === 0) {
    return { text: original, changed: false, added: [], needsDecision: [], insertions: [], routingPath };
  }

  const applied = apply(text, edits, eol);
  const { insertions } = applied;
  const upgraded = bom + applied.text;
  const after = parseConfigText(upgraded);
  if (after.problems.length > 0 || !after.config) {
    throw new ExitError(
      `the upgraded ${file} would not load, so nothing was written; please report this, and add the missing keys by hand`,
      EXIT_FAILURE,
      "failure",
      invalidMessage(upgraded, file),
    );
  }
  if (!isDeepStrictEqual(after.config, before.config)) {
    throw new ExitError(
      `the upgraded ${file} would mean something else (a merge key or an alias supplies some of its settings?), so nothing was written; add the missing keys by hand`,
      EXIT_FAILURE,
      "failure",
    );
  }

  const afterTop = parseDocument(upgraded).contents;
  const added = isMap(afterTop) ? addedPaths(afterTop, isMap(top) ? top : undefined, routingPath) : [];
  const intended = edits.flatMap((edit) => edit.keys);
  if (intended.some((key) => !added.includes(key))) {
    // The text went in somewhere it does not count (inside a comment of a flow mapping, say).
    throw new ExitError(
      `could not place ${intended.filter((key) => !added.includes(key)).join(", ")} in ${file}, so nothing was written; add the keys by hand (the defaults are in docs/config.md)`,
      EXIT_FAILURE,
      "failure",
    );
  }
  const requireStart = formatPath([...routingPath, "control", "requireStartCommand"]);
  const control = before.config.routing.control;
  const needsDecision = [
    ...(added.includes(requireStart) ? [{ key: requireStart, why: requireStartWhy(control.keywords.start, control.enabled) }] : []),
    ...switchDecisions(routingPath, added),
    ...(added.includes(CLOSE_AFTER_KEY) ? [{ key: CLOSE_AFTER_KEY, why: CLOSE_AFTER_WHY }] : []),
  ];
  return { text: upgraded, changed: true, added, needsDecision, insertions, routingPath };
}

/** The keys the upgrade targets that the new document has and the old one lacked, in file order. */
function addedPaths(afterTop: YAMLMap, beforeTop: YAMLMap | undefined, routingPath: ConfigPath): string[] {
  const targets = [...leafPaths(stateDefaults(), ["state"]), ...leafPaths(routingDefaults(), routingPath), ...leafPaths(graphDefaults(), ["graph"])].map(
    (dotted) => dotted.split("."),
  );
  const present = (root: YAMLMap | undefined, path: ConfigPath): boolean => root !== undefined && hasKey(root, path);
  return targets.filter((path) => present(afterTop, path) && !present(beforeTop, path)).map((path) => formatPath(path));
}

// ---------------------------------------------------------------------------------------------
// Offers

/** Something the upgrade suggests and does only when asked (or leaves to the operator). */
export interface UpgradeOffer {
  readonly action: "move-poll-state" | "move-routing-block" | "add-webhook-events";
  /** The flag that carries it out; null when it is done by hand. */
  readonly flag: string | null;
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

export const MOVE_POLL_STATE_FLAG = "--move-poll-state";

/**
 * The pre-state-root poll-state file the poller still reads, and where it belongs — the same rule
 * the poller applies (resolvePollStateFile): only while `polling.stateFile` is unset, the legacy
 * file exists and the new default does not.
 */
export function legacyPollStateMove(
  paths: Pick<StatePaths, "pollStateFile" | "legacyPollStateFile">,
  exists?: (path: string) => boolean,
): { from: string; to: string } | undefined {
  const resolved = resolvePollStateFile(paths, exists);
  return resolved.legacy ? { from: resolved.file, to: paths.pollStateFile } : undefined;
}

export function upgradeOffers(
  upgrade: Pick<ConfigUpgrade, "routingPath">,
  paths: Pick<StatePaths, "pollStateFile" | "legacyPollStateFile">,
  exists?: (path: string) => boolean,
): UpgradeOffer[] {
  const offers: UpgradeOffer[] = [];
  const move = legacyPollStateMove(paths, exists);
  if (move) {
    offers.push({
      action: "move-poll-state",
      flag: MOVE_POLL_STATE_FLAG,
      ...move,
      why: "the poller still reads the poll state from where it lived before state.root; moved, it sits with the other session tracking under sessions/",
    });
  }
  if (formatPath(upgrade.routingPath) === formatPath(LEGACY_ROUTING)) {
    offers.push({
      action: "move-routing-block",
      flag: null,
      from: formatPath(LEGACY_ROUTING),
      to: formatPath(TOP_LEVEL_ROUTING),
      why: "webhooks.ghWebhook.routing is the older spelling of the top-level routing block; move it to the top level by hand (outdent it under a top-level `routing:` key)",
    });
  }
  return offers;
}

/**
 * Moves the poll-state file without ever replacing one: a hard link fails when the target exists
 * (a rename would silently overwrite it), then the old name is removed. Across filesystems (a
 * state.root elsewhere) it is an exclusive copy instead.
 */
export async function movePollStateFile(from: string, to: string): Promise<void> {
  // Until the new file exists, nothing has moved: the poller keeps reading the old one.
  const notMoved = (error: unknown): ExitError =>
    error instanceof ExitError
      ? error
      : new ExitError(`could not move the poll state ${from} to ${to}: ${messageOf(error)}; it stays where it is, and the poller keeps using it`, EXIT_FAILURE);
  try {
    await fs.mkdir(dirname(to), { recursive: true });
    try {
      await fs.link(from, to);
    } catch (error) {
      const code = errnoOf(error);
      if (code === "EEXIST") throw targetExists(to);
      if (code === "ENOENT") throw new ExitError(`${from} is gone; nothing to move`, EXIT_FAILURE, "not-found");
      if (code !== "EXDEV" && code !== "EPERM" && code !== "ENOTSUP") throw error;
      try {
        await fs.copyFile(from, to, fs.constants.COPYFILE_EXCL);
      } catch (copyError) {
        if (errnoOf(copyError) === "EEXIST") throw targetExists(to);
        throw copyError;
      }
    }
  } catch (error) {
    throw notMoved(error);
  }
  // From here the new file exists, so the poller reads it (resolvePollStateFile): the old one is only clutter.
  try {
    await fs.unlink(from);
    await fsyncDirectory(dirname(to));
    await fsyncDirectory(dirname(from));
  } catch (error) {
    throw new ExitError(
      `the poll state is now at ${to} and the poller uses it there, but ${from} could not be removed: ${messageOf(error)}; delete it by hand`,
      EXIT_FAILURE,
    );
  }
}

function targetExists(to: string): ExitError {
  return new ExitError(
    `${to} already exists, so the old poll state was not moved over it; keep the one you want (the poller uses ${to}) and delete the other`,
    EXIT_FAILURE,
    "conflict",
  );
}
