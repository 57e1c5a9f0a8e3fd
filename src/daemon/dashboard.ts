import { randomUUID } from "node:crypto";
import { unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { writeJsonAtomic } from "../state/atomic.js";
import { messageOf } from "../errors.js";
import { DashboardServer } from "../dashboard/server.js";
import type { DashboardDeps } from "../dashboard/server.js";
import { SessionMissingError } from "../harness/runner.js";
import type { ItemTitles } from "../trackers/titles.js";
import { announceControl } from "../dispatch/announce-control.js";
import type { Dispatcher } from "../dispatch/dispatcher.js";
import { loadGraphs } from "../graph/registry.js";
import { isLive } from "../registry/record.js";
import { workItemActedOn } from "../registry/acted-on.js";
import { boundExcerpt } from "../routing/inbound.js";
import { closeSession } from "../sessions/close.js";
import { markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import { fleetReaderOf } from "../fleet/index.js";
import type { Runtime, RuntimeInput } from "./runtime.js";
import { servedRefsOf, unservedReason } from "./socket/methods.js";
import { readWhySituation, whySituationOf } from "./socket/why-situation.js";
import { dashboardStatusFile } from "./dashboard-status.js";
import type { DashboardStatus } from "./dashboard-status.js";

/**
 * The dashboard in the daemon (docs/dashboard.md): its server started with the daemon's own
 * dispatcher, trackers and close path, so every action it takes is the daemon's, and its place
 * recorded in `<state.root>/dashboard.json` for `status` and `the-loop dashboard` — the URL,
 * never a token.
 */

export interface RunningDashboard {
  readonly server: DashboardServer;
  stop(): Promise<void>;
}

/** Starts the dashboard when dashboard.enabled; throws (with the fix) when it may not listen where the config asks. */
export async function startDashboard(
  input: RuntimeInput,
  runtime: Runtime,
  dispatcher: Dispatcher,
  warn: (message: string) => void,
  titles?: ItemTitles,
): Promise<RunningDashboard | undefined> {
  const { config, paths, events } = input;
  if (!config.dashboard.enabled) return undefined;
  const configDir = input.configFile !== undefined ? dirname(input.configFile) : input.baseDir;
  const graphs = (await loadGraphs(config, configDir, input.configFile !== undefined ? { configFile: input.configFile } : {})).graphs;
  const served = servedRefsOf(config);
  const hasSession = (ref: string): boolean => {
    try {
      return runtime.registry.get(ref) !== undefined;
    } catch {
      // A record that does not parse is still a session the daemon had for the item.
      return true;
    }
  };
  const keywords = config.routing.control.keywords;
  const server = new DashboardServer({
    config: config.dashboard,
    configDir,
    paths,
    stores: runtime.stores,
    events,
    graphs,
    budgetLimits: config.routing.budget,
    ...(titles !== undefined ? { titleOf: (ref: string) => titles.titleOf(ref), refreshTitles: () => titles.refresh() } : {}),
    commentsOf: async (ref, limit) => {
      const tracker = runtime.trackers.forRef(ref);
      if (tracker.recentComments === undefined) throw new Error(`the ${tracker.kind} tracker lists no comments`);
      const thread = await tracker.recentComments(parseWorkItemRef(ref), limit);
      titles?.note(ref, thread.title);
      return thread.comments;
    },
    terminal: terminalPorts(runtime),
    ...fleetReaderOf(runtime.stores.backend.database?.pool, config.state.heartbeatSeconds),
    whyOf: async (ref) => whySituationOf(await readWhySituation(paths, config, ref, runtime.stores)),
    actions: {
      control: (request) => dispatcher.control(request),
      announce: (request) => announceControl({ trackers: runtime.trackers, events, keywords }, request),
      graphAnswer: (request) => dispatcher.graphAnswer(request),
      close: async (ref) => {
        const closed = await closeSession(runtime.closeOptions, ref, "dashboard");
        return closed === undefined ? undefined : closed.tmuxTarget;
      },
      answer: (ref, text, actor) => answerQuestion(runtime, dispatcher, ref, text, actor),
      actedOn: (ref) => workItemActedOn(ref, runtime.links, runtime.registry),
      unserved: (ref) => unservedReason(served, ref, hasSession),
      events,
    },
  });
  const listening = await server.start();
  if (listening.warning !== undefined) warn(listening.warning);
  const status: DashboardStatus = {
    pid: process.pid,
    url: listening.url,
    tls: listening.tls,
    operator: config.dashboard.operator ?? null,
    since: new Date().toISOString(),
  };
  const file = dashboardStatusFile(paths);
  try {
    await writeJsonAtomic(file, status);
  } catch (error) {
    warn(`could not record where the dashboard listens (${file}): ${messageOf(error)}; \`the-loop dashboard\` asks the daemon itself`);
  }
  return {
    server,
    async stop() {
      await server.stop();
      try {
        unlinkSync(file);
      } catch {
        // Already gone; a stale file is recognised by its pid anyway.
      }
    },
  };
}

/**
 * The read-only terminal view's way to the panes: the item's live session's tmux target, and the
 * runner's capture of it (tmux, argv arrays; nothing is ever sent to the pane).
 */
function terminalPorts(runtime: Runtime): NonNullable<DashboardDeps["terminal"]> {
  const liveTarget = (ref: string): string | undefined => {
    try {
      const record = runtime.registry.get(ref);
      return record !== undefined && isLive(record) ? record.tmuxTarget : undefined;
    } catch {
      // A record that does not parse shows no terminal; `sessions list` reports it.
      return undefined;
    }
  };
  return {
    target: async (ref) => {
      const target = liveTarget(ref);
      return target !== undefined && (await runtime.runner.probe(target)) !== "absent" ? target : undefined;
    },
    live: (ref, target) => liveTarget(ref) === target,
    capture: async (target) => {
      try {
        return await runtime.runner.view(target);
      } catch (error) {
        if (error instanceof SessionMissingError) return undefined;
        throw error;
      }
    },
  };
}

/**
 * The operator's answer to the agent's question: handed to the dispatcher as the comment an
 * authorized person would write (it is delivered into the session, and the question is answered),
 * then recorded on the thread in one marked comment. Needs a live session.
 */
async function answerQuestion(
  runtime: Runtime,
  dispatcher: Dispatcher,
  ref: string,
  text: string,
  actor: string,
): Promise<{ readonly delivered: boolean; readonly problem?: string }> {
  const record = runtime.registry.get(ref);
  if (record === undefined || !isLive(record)) return { delivered: false, problem: `${ref} has no live session to answer` };
  await dispatcher.handle({
    source: "cli",
    deliveryId: `dashboard-answer-${randomUUID()}`,
    kind: "commented",
    trackerEvent: "dashboard:answer",
    workItems: [record.workItem],
    actor,
    body: text,
    labels: [],
    itemState: "open",
    occurredAt: new Date().toISOString(),
    excerpt: boundExcerpt({ source: "dashboard", body: text }),
  });
  const quoted = text
    .split("\n")
    .map((line) => `> ${line}`)
    .join("\n");
  try {
    await runtime.trackers
      .forRef(ref)
      .postComment(parseWorkItemRef(ref), markSelfAuthored(`💬 **the-loop**: ${actor} answered from the-loop's dashboard:\n\n${quoted}`));
    return { delivered: true };
  } catch (error) {
    return { delivered: true, problem: `the answer reached the session, but could not be recorded on the thread: ${messageOf(error)}` };
  }
}
