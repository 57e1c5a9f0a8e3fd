import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { EXIT_FAILURE, ExitError, UsageError, messageOf } from "../../../errors.js";
import { MemoryEventSink } from "../../../events/log.js";
import type { HookPoint } from "../../../sdk/hooks/catalog.js";
import type { LoopPoint, LoopPointName, LoopPayloadOf } from "../../../sdk/hooks/loop-catalog.js";
import { HOOK_POINTS, HOOK_POINT_NAMES } from "../../../sdk/hooks/points.js";
import type { HookChain, HookContext } from "../../../hooks/index.js";
import { displayPath } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import { stdout } from "../../output.js";
import { declaredHook } from "./runs.js";

/**
 * `the-loop hooks test NAME --point P`: one declared hook, loaded by the daemon's own loader (so
 * the same executor, timeout and environment rules), called once on a payload, its answer read by
 * the daemon's own chain — and then nothing is done with it. No other hook is loaded, no daemon is
 * asked, nothing is written to the event log or the trackers. The hook's own side effects are its
 * own: they happen (the help says so).
 */

export interface HooksTestOptions {
  readonly point: string;
  /** A JSON file, or `-` for stdin; absent: a sample payload of the point. */
  readonly payload?: string;
  /** A work item: the payload the daemon would send at the point for it, from its records. */
  readonly workItem?: string;
  readonly json: boolean;
}

/** What `hooks test --json` prints. */
export interface HookTestReport {
  readonly hook: string;
  readonly point: string;
  readonly payload: HookContext;
  readonly sampled: boolean;
  /** Where the payload came from: the point's sample, the operator's file, or a work item's records. */
  readonly source: "sample" | "payload" | "work-item";
  /** `--work-item`: the item, and the payload's keys its records gave (the rest are the sample's). */
  readonly workItem?: { readonly ref: string; readonly fromItem: readonly string[] };
  /** What the hook answered, as its executor returned it (absent: nothing, or it failed to answer). */
  readonly answer?: unknown;
  readonly outcome: string;
  readonly duration_ms: number;
  readonly error?: string;
  /** What the daemon would do with the answer, in words. */
  readonly daemonWould: readonly string[];
}

function isLoopPoint(point: HookPoint): point is LoopPoint {
  return point.family === "loop";
}

function readPayload(source: string): HookContext {
  let text: string;
  try {
    text = source === "-" ? readFileSync(0, "utf8") : readFileSync(resolve(source), "utf8");
  } catch (error) {
    throw new ExitError(`cannot read the payload ${source === "-" ? "from stdin" : displayPath(resolve(source))}: ${messageOf(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--payload: not JSON: ${messageOf(error)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError("--payload: the payload must be a JSON object");
  return value as HookContext;
}

export async function runHooksTest(globals: GlobalOptions, name: string, options: HooksTestOptions): Promise<void> {
  const point = HOOK_POINTS.find((candidate) => candidate.name === options.point);
  if (point === undefined) {
    throw new UsageError(`--point "${options.point}" is not a hook point (known: ${HOOK_POINT_NAMES.join(", ")})`);
  }
  const { loaded, entry } = await declaredHook(globals, name);
  if (entry.on !== undefined && !entry.on.includes(point.name)) {
    throw new ExitError(`hook "${name}" is not called at ${point.name}: its on names ${entry.on.join(", ") || "none"}`, EXIT_FAILURE, "usage");
  }
  if (entry.on === undefined && point.optIn === true) {
    throw new ExitError(`hook "${name}" is not called at ${point.name}: a loop event runs only an entry whose on names it`, EXIT_FAILURE, "usage");
  }
  const file = loaded.source.path;
  const raw: unknown = loaded.config.hooks;
  const entries = Array.isArray(raw) ? (raw as unknown[]) : [];
  const declared = entries.find((item) => typeof item === "object" && item !== null && (item as { name?: unknown }).name === name);
  if (file === null || declared === undefined) throw new ExitError(`hook "${name}" is not in the config's hooks list`, EXIT_FAILURE, "not-found");

  if (options.payload !== undefined && options.workItem !== undefined)
    throw new UsageError("--payload and --work-item each give the payload: give one of them");
  const { samplePayload } = await import("../../../hooks/sample.js");
  const sample = samplePayload(point);
  let payload = sample;
  let fromItem: { readonly ref: string; readonly fromItem: readonly string[] } | undefined;
  if (options.payload !== undefined) payload = readPayload(options.payload);
  if (options.workItem !== undefined) {
    const { itemPayload } = await import("./item-payload.js");
    const built = await itemPayload(loaded, options.workItem, point, sample);
    payload = built.payload;
    const { canonicalRef } = await import("../../canonical-ref.js");
    fromItem = { ref: canonicalRef(options.workItem, loaded), fromItem: built.fromItem };
  }
  const source = options.payload !== undefined ? "payload" : fromItem !== undefined ? "work-item" : "sample";
  const sampled = source === "sample";

  const answers: unknown[] = [];
  const sink = new MemoryEventSink();
  const { HookLoadError, loadHooks } = await import("../../../hooks/load.js");
  let chain;
  try {
    // Enabled for the test: trying an entry before switching it on is what the command is for.
    chain = await loadHooks({
      raw: [{ ...(declared as Record<string, unknown>), enabled: true }],
      configDir: dirname(file),
      configPath: file,
      events: sink,
      chain: { timers: false, onAnswer: (_hook, answer) => answers.push(answer) },
    });
  } catch (error) {
    if (error instanceof HookLoadError) throw new ExitError(`hook "${name}" does not load: ${error.message}`, EXIT_FAILURE, "config");
    throw error;
  }
  try {
    if (!chain.handles(point.name)) {
      throw new ExitError(`hook "${name}" is not called at ${point.name}: its class does not override ${point.method}()`, EXIT_FAILURE, "usage");
    }
    const daemonWould = isLoopPoint(point) ? await tryLoop(chain, point, payload) : await tryLifecycle(chain, point, payload);
    const ran = sink.events.find((event) => event.type === "hooks.ran")?.fields ?? {};
    const report: HookTestReport = {
      hook: name,
      point: point.name,
      payload,
      sampled,
      source,
      ...(fromItem !== undefined ? { workItem: fromItem } : {}),
      ...(answers[0] !== undefined ? { answer: answers[0] } : {}),
      outcome: typeof ran["outcome"] === "string" ? ran["outcome"] : "unknown",
      duration_ms: typeof ran["duration_ms"] === "number" ? ran["duration_ms"] : 0,
      ...(typeof ran["error"] === "string" ? { error: ran["error"] } : {}),
      daemonWould,
    };
    printReport(report, options.json);
  } finally {
    await chain.close();
  }
}

type Chain = HookChain;

async function tryLifecycle(chain: Chain, point: HookPoint, payload: HookContext): Promise<string[]> {
  const outcome = await chain.runPoint(point, payload);
  if (outcome.refusal !== undefined) {
    const proceed = point.decisions["proceed"];
    return [`refuse: ${outcome.refusal.reason}`, ...(proceed !== undefined ? [proceed.applies] : [])];
  }
  if (outcome.changed.length === 0) return ["go on unchanged: the answer changes no decision"];
  return outcome.changed.map((field) => `${field} → ${JSON.stringify(outcome.context[field])}: ${point.decisions[field]?.applies ?? ""}`.trimEnd());
}

async function tryLoop(chain: Chain, point: LoopPoint, payload: HookContext): Promise<string[]> {
  const outcome = await chain.runLoop(point.name as LoopPointName, payload as LoopPayloadOf<LoopPointName>);
  if (outcome.denied !== undefined) {
    const reason = outcome.denied.reason === "" ? "no reason given" : `reason: ${outcome.denied.reason}`;
    return [`deny ${point.name} (${reason})`, point.decisions["denied"]?.applies ?? ""].filter((line) => line !== "");
  }
  const labels = outcome.annotations.flatMap((annotation) => Object.entries(annotation.labels).map(([key, text]) => `${key}=${text}`));
  if (labels.length > 0) return [`record the labels ${labels.join(", ")} (hooks.loop_annotated); nothing of the run changes`];
  return point.canDeny ? ["go on: the hook did not deny"] : ["go on: nothing to record"];
}

function sourceText(report: HookTestReport): string {
  if (report.workItem !== undefined) {
    const facts = report.workItem.fromItem;
    return ` (on ${report.workItem.ref}'s payload, as the daemon would build it now; from its records: ${facts.length > 0 ? facts.join(", ") : "nothing"}, the rest a sample's)`;
  }
  return report.sampled ? " (on a sample payload; --payload FILE or --work-item REF gives a real one)" : "";
}

function printReport(report: HookTestReport, json: boolean): void {
  if (json) {
    stdout.json(report);
    return;
  }
  const outcome = report.outcome === "failed" || report.outcome === "rejected" ? stdout.paint("red", report.outcome) : report.outcome;
  const lines = [
    `${stdout.paint("bold", report.hook)} at ${report.point}${sourceText(report)}`,
    `  answered:  ${"answer" in report ? JSON.stringify(report.answer) : "nothing"}`,
    `  outcome:   ${outcome} in ${report.duration_ms} ms`,
  ];
  if (report.error !== undefined)
    lines.push(`  ${report.outcome === "denied" ? "reason" : "error"}:${report.outcome === "denied" ? "    " : "     "}${report.error}`);
  lines.push(`  the daemon would: ${report.daemonWould[0] ?? "go on"}`);
  for (const more of report.daemonWould.slice(1)) lines.push(`    ${more}`);
  lines.push("Nothing was done with the answer; what the hook itself does (a file, a message) did happen.");
  stdout.line(lines.join("\n"));
}
