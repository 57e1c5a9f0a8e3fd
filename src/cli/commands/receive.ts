import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { GITHUB_WEBHOOK_EVENTS } from "../../config/schema.js";
import { AnswerGivenExit, EXIT_FAILURE, ExitError, UsageError, messageOf } from "../../errors.js";
import type { EventFields, EventSink, EventType } from "../../events/index.js";
import { inboundFromGitHub } from "../../ingress/github-events.js";
import type { InboundEvent } from "../../routing/inbound.js";
import { ControlStore } from "../../control/store.js";
import { policyOf, registryViewOf, route } from "../../routing/router.js";
import type { Decision, DropReason } from "../../routing/router.js";
import { applyLink } from "../../dispatch/pr-linkage.js";
import { PullRequestLinks } from "../../registry/pr-links.js";
import { SessionRegistry } from "../../registry/registry.js";
import { openDaemonProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { stderr, stdout } from "../output.js";

export interface ReceiveOptions {
  readonly event: string;
  readonly payload: string;
  readonly delivery?: string;
  readonly dispatch: boolean;
  readonly json: boolean;
}

/**
 * `the-loop receive`: one webhook delivery, as copied from GitHub's "Recent Deliveries", through
 * the same normalizer and router the receiver uses. A dry run by default — it reads the registry
 * and the pull-request bindings and writes nothing but one event-log line — so a person can ask
 * "what would the-loop do with this?" without a session being started. `--dispatch` hands the
 * event to a dispatcher of its own and waits for it to be carried out.
 */
export async function runReceive(globals: GlobalOptions, options: ReceiveOptions): Promise<void> {
  const name = options.event.trim();
  if (name === "") throw new UsageError("--event names the X-GitHub-Event header, e.g. issue_comment");
  const deliveryId = options.delivery?.trim() || `receive-${randomUUID()}`;
  const project = await openDaemonProject(globals, "receive");
  const webhook = project.config.webhooks.ghWebhook;
  const { payload, bytes } = await readPayload(options.payload, webhook.maxBodyBytes);

  // The receiver ignores what its config does not ask for; the dry run answers as it would.
  const supported = (GITHUB_WEBHOOK_EVENTS as readonly string[]).includes(name);
  const normalized =
    supported && !webhook.events.some((enabled) => enabled === name)
      ? { ignored: "disabled-event" }
      : inboundFromGitHub(name, payload, { deliveryId, source: "gh-webhook", defaultHost: await defaultHostOf(project) });
  if ("rejected" in normalized) {
    // Like a body that is not JSON: nothing is decided, so nothing is recorded.
    throw new UsageError(`the payload is not what GitHub sends for ${name} (${normalized.rejected}): the receiver would refuse it with 400 (invalid-payload)`);
  }
  if (!("event" in normalized)) {
    project.events.emit("webhook.ignored", { delivery_id: deliveryId, github_event: name, reason: normalized.ignored });
    printIgnored(options, deliveryId, name, normalized.ignored);
    return;
  }

  project.events.emit("webhook.received", { delivery_id: deliveryId, github_event: name, action: actionOf(payload), bytes, verified: false });
  const links = project.stores?.links ?? new PullRequestLinks(project.paths.linksDir);
  const registry = project.stores?.registry ?? new SessionRegistry({ dir: project.paths.registryDir });
  const control = project.stores?.control ?? new ControlStore({ dir: project.paths.controlDir });
  // What the dispatcher does on arrival: a stored binding first, then the router.
  const linked = applyLink(normalized.event, links, (problem) => stderr.warn(problem)).event;
  let decision: Decision;
  try {
    decision = route(linked, policyOf(project.config.routing), registryViewOf(registry, control), { has: () => false });
  } catch (error) {
    throw new ExitError(`cannot decide: ${messageOf(error)}`);
  }
  const report = reportOf(deliveryId, name, linked, decision);
  if (!options.dispatch) {
    print(options, { ...report, dispatched: false });
    return;
  }

  const outcome = await dispatch(project, normalized.event);
  print(options, { ...report, dispatched: true, outcome });
  // The whole answer is printed; a delivery the dispatcher could not settle is a failure to a script.
  if (!outcome.settled) throw new AnswerGivenExit(EXIT_FAILURE);
}

// ---------------------------------------------------------------------------------------------

/**
 * Reads at most `max` bytes and one more: a payload over the receiver's cap is refused as the
 * receiver refuses it (413), and a path such as /dev/zero or an endless pipe is not read forever.
 */
async function readPayload(file: string, max: number): Promise<{ payload: unknown; bytes: number }> {
  const where = file === "-" ? "stdin" : file;
  let read: { text: string; bytes: number } | undefined;
  try {
    read = await readBounded(file === "-" ? process.stdin : createReadStream(file, { end: max }), max);
  } catch (error) {
    throw new UsageError(`cannot read the payload from ${where}: ${messageOf(error)}`);
  }
  if (read === undefined) {
    throw new UsageError(`the payload in ${where} is over webhooks.ghWebhook.maxBodyBytes (${max}): the receiver would refuse it with 413 (body-too-large)`);
  }
  const { text, bytes } = read;
  let json = text.trim();
  // A delivery made with content type application/x-www-form-urlencoded carries its JSON in `payload`.
  if (json.startsWith("payload=")) json = new URLSearchParams(json).get("payload") ?? "";
  if (json === "") throw new UsageError(`the payload in ${where} is empty`);
  try {
    const payload: unknown = JSON.parse(json);
    if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
      throw new UsageError(`the payload in ${where} is not a JSON object (a webhook delivery's body is one)`);
    }
    return { payload, bytes };
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`the payload in ${where} is not JSON: ${messageOf(error)}`);
  }
}

/** The whole stream as text, or undefined once it grows over `max` bytes (then no more is read). */
async function readBounded(stream: NodeJS.ReadableStream, max: number): Promise<{ text: string; bytes: number } | undefined> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  // Leaving the loop early destroys the stream, which closes the file.
  for await (const chunk of stream) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    bytes += buffer.length;
    if (bytes > max) return undefined;
    chunks.push(buffer);
  }
  return { text: Buffer.concat(chunks, bytes).toString("utf8"), bytes };
}

/**
 * The web host of the configured GitHub, as the daemon derives it: refs are on it, and a payload
 * whose html_url is elsewhere is refused. Loaded on use: the client module brings in Octokit.
 */
async function defaultHostOf(project: Project): Promise<string> {
  const { githubApiUrl, refHostForApiUrl } = await import("../../trackers/github/client.js");
  return refHostForApiUrl(githubApiUrl(project.config.integrations.github));
}

function actionOf(payload: unknown): string | undefined {
  const action = typeof payload === "object" && payload !== null && "action" in payload ? payload.action : undefined;
  return typeof action === "string" ? action : undefined;
}

// ---------------------------------------------------------------------------------------------
// The answer

interface WorkItemReport {
  readonly ref: string;
  readonly kind: string;
  readonly url: string;
  /** How a PR named it; absent for the event's own item. */
  readonly linkedBy?: string;
}

interface DecisionReport {
  readonly action: Decision["action"];
  readonly reason?: DropReason | "control-ambiguous";
  readonly workItem?: string;
  /** The live session's status, for a delivery or a control command. */
  readonly sessionStatus?: string;
  /** The control command a comment carries; for an ambiguous one, every command it names. */
  readonly command?: string;
  readonly commands?: readonly string[];
  /** Whether the spawn policy arms the item, for a control command. */
  readonly armed?: boolean;
}

interface Report {
  readonly deliveryId: string;
  readonly event: string;
  readonly trackerEvent: string;
  readonly kind: string;
  readonly actor: string | null;
  readonly workItems: readonly WorkItemReport[];
  readonly pullRequest?: InboundEvent["pullRequest"];
  readonly decision: DecisionReport;
}

interface Outcome {
  readonly settled: boolean;
  /** What the dispatcher recorded while it carried the event out, in order. */
  readonly events: readonly Record<string, unknown>[];
}

function reportOf(deliveryId: string, name: string, event: InboundEvent, decision: Decision): Report {
  return {
    deliveryId,
    event: name,
    trackerEvent: event.trackerEvent,
    kind: event.kind,
    actor: event.actor,
    workItems: event.workItems.map((item) => ({
      ref: item.ref,
      kind: item.kind,
      url: item.url,
      ...(event.linkedBy?.[item.ref] !== undefined ? { linkedBy: event.linkedBy[item.ref] } : {}),
    })),
    ...(event.pullRequest ? { pullRequest: event.pullRequest } : {}),
    decision: {
      action: decision.action,
      ...(decision.action === "drop" ? { reason: decision.reason } : {}),
      ...(decision.workItem ? { workItem: decision.workItem.ref } : {}),
      ...(decision.action === "deliver" ? { sessionStatus: decision.status } : {}),
      ...(decision.action === "control" ? { command: decision.command, sessionStatus: decision.session, armed: decision.armed } : {}),
      ...(decision.action === "drop" && decision.reason === "control-ambiguous" ? { commands: decision.commands } : {}),
    },
  };
}

const DROP_EXPLANATIONS: Readonly<Record<DropReason | "control-ambiguous", string>> = {
  "duplicate-delivery": "this delivery id already reached the session",
  "no-work-item": "the event names no work item",
  "self-echo": "the-loop's own doing come back: the text carries its marker, or the local tracker records it under the-loop's login",
  "unauthorized-actor": "the actor is not in routing.authorizedUsers",
  "spawn-policy": "no live session, and routing.spawnOnUnmatched does not start one (see autoExecuteLabel)",
  "awaiting-start": "the item is armed, but no authorized start command has been honoured (routing.control.requireStartCommand)",
  "execution-stopped": "the item's last control command paused or stopped it; a start command lifts that",
  "control-ambiguous": "the comment names two different control commands, so none is executed",
  "item-closed": "no live session, and a closed item never starts one",
  "no-session": "no live session to close or to tell (an item's closing, or a CI failure, which never starts one)",
  "feedback-ignored": "routing.feedback ignores this kind of feedback (a CI failure, a review requesting changes) in this repository",
};

function describeDecision(decision: DecisionReport): string {
  switch (decision.action) {
    case "spawn":
      return `spawn a session for ${decision.workItem ?? "?"}`;
    case "deliver":
      return `deliver into the ${decision.sessionStatus ?? "live"} session of ${decision.workItem ?? "?"}`;
    case "close":
      return `close the session of ${decision.workItem ?? "?"}`;
    case "control": {
      const session = decision.sessionStatus === "none" ? "no live session" : `its ${decision.sessionStatus ?? "live"} session`;
      return `${decision.command ?? "?"} command on ${decision.workItem ?? "?"} (${session}, ${decision.armed ? "armed" : "not armed"})`;
    }
    case "drop":
      return `drop (${decision.reason ?? "?"}: ${decision.reason ? DROP_EXPLANATIONS[decision.reason] : ""})`;
  }
}

function print(options: ReceiveOptions, report: Report & { dispatched: boolean; outcome?: Outcome }): void {
  if (options.json) {
    stdout.json(report);
    return;
  }
  stdout.line(`delivery ${report.deliveryId}: ${report.trackerEvent} → ${report.kind} by ${report.actor ?? "(no actor)"}`);
  for (const [index, item] of report.workItems.entries()) {
    const how = item.linkedBy ? `, linked by ${item.linkedBy}` : "";
    stdout.line(`  ${index === 0 ? "work items" : "          "} ${item.ref} (${item.kind.replace("_", " ")}${how})`);
  }
  stdout.line(`  decision   ${describeDecision(report.decision)}`);
  if (!report.dispatched) {
    stdout.line("  dry run: nothing was done; --dispatch carries it out");
    return;
  }
  const outcome = report.outcome;
  stdout.line(`  dispatched ${outcome?.settled ? "settled" : "NOT settled (see the events below and `the-loop events`)"}`);
  for (const event of outcome?.events ?? []) {
    const { event: type, ...fields } = event;
    const detail = ["work_item", "reason", "error", "tmux_target"]
      .filter((key) => fields[key] !== undefined)
      .map((key) => `${key}=${String(fields[key])}`)
      .join(" ");
    stdout.line(`    ${String(type)}${detail ? ` ${detail}` : ""}`);
  }
}

function printIgnored(options: ReceiveOptions, deliveryId: string, name: string, reason: string): void {
  if (options.json) {
    stdout.json({ deliveryId, event: name, ignored: reason, decision: null, dispatched: false });
    return;
  }
  stdout.line(`delivery ${deliveryId}: ${name} is ignored (${reason}); the receiver would answer 202 and do nothing`);
}

// ---------------------------------------------------------------------------------------------
// --dispatch

/** Records what the dispatcher emits (for the answer) and still writes it to the event log. */
class TeeSink implements EventSink {
  readonly seen: Record<string, unknown>[] = [];
  constructor(private readonly inner: EventSink) {}
  emit<T extends EventType>(type: T, fields: EventFields<T>): void {
    this.seen.push({ event: type, ...fields });
    this.inner.emit(type, fields);
  }
}

async function dispatch(project: Project, event: InboundEvent): Promise<Outcome> {
  // Loaded only here: the dry run must not pay for, or touch, the session machinery.
  const { composeRuntime } = await import("../../daemon/runtime.js");
  const { loadDaemonHooks } = await import("../../daemon/hooks.js");
  const events = new TeeSink(project.events);
  const input = {
    config: project.config,
    paths: project.paths,
    baseDir: project.loaded.baseDir,
    configFile: project.loaded.source.path ?? undefined,
    events,
    ...(project.stores !== undefined ? { stores: project.stores } : {}),
  };
  const runtime = composeRuntime(input);
  // Dispatched as the daemon would: a declaration that does not load stops it, as it stops the daemon.
  const hooks = await loadDaemonHooks(input);
  const dispatcher = await runtime.dispatcher((message) => stderr.warn(message), hooks);
  let settled: boolean;
  try {
    settled = (await dispatcher.handle(event)).settled;
  } catch (error) {
    throw new ExitError(`dispatching failed: ${messageOf(error)}`);
  } finally {
    await dispatcher.drain();
    await hooks.close();
  }
  return { settled, events: events.seen };
}
