import { messageOf } from "../errors.js";
import { isResumableSessionId, newHarnessSessionId } from "../harness/adapters.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import { SessionMissingError, TargetLiveError } from "../harness/runner.js";
import type { PasteOptions } from "../harness/runner.js";
import { SESSION_TOKEN_ENV, issueCredential } from "./credential.js";
import { adapterOf, sameLiveSession } from "./context.js";
import type { ContextNeeds } from "./context.js";
import { learnHarnessSessionId } from "./harness-id.js";
import { HarnessNotReadyError, awaitReady } from "./readiness.js";
import type { SessionRecord } from "../registry/record.js";

/**
 * A session's harness in its tmux pane: waiting until it can take input, handing it text,
 * starting it again when its pane died, and the record's mark that it runs. What to paste and
 * when a missing pane means a dead harness is delivery's to decide; this only does it.
 */

/** Pastes into the session's pane, Enter waiting for the harness to show the paste where it knows how to tell. */
export async function pasteIntoPane(ctx: ContextNeeds<"routing", "runner">, record: SessionRecord, text: string): Promise<void> {
  let adapter: HarnessAdapter | undefined;
  try {
    adapter = adapterOf(ctx, record.harness);
  } catch {
    adapter = undefined;
  }
  await ctx.options.runner.pasteText(record.tmuxTarget, text, adapter === undefined ? {} : pasteOptionsOf(adapter));
}

/** How a harness is handed a paste: when Enter may follow it, again while the box shows it, and who brackets it. */
export function pasteOptionsOf(
  adapter: Pick<HarnessAdapter, "pastedPattern" | "submitUntilTaken" | "readyPattern" | "blockedPattern" | "bracketItself">,
): PasteOptions {
  const bracket = adapter.bracketItself === true ? { bracketItself: true } : {};
  const pastedPattern = adapter.pastedPattern;
  if (pastedPattern === undefined) return bracket;
  if (adapter.submitUntilTaken !== true) return { pastedPattern, ...bracket };
  return {
    pastedPattern,
    submitUntilTaken: true,
    ...(adapter.readyPattern === undefined ? {} : { readyPattern: adapter.readyPattern }),
    ...(adapter.blockedPattern === undefined ? {} : { blockedPattern: adapter.blockedPattern }),
    ...bracket,
  };
}

/**
 * Waits until the harness can take input: for one with a ready pattern (Claude Code), until its
 * screen shows it and no dialog, up to tmux.readyTimeoutSeconds; for the rest, the startup grace.
 * Throws HarnessNotReadyError (after recording session.not_ready) when it never is: the text is
 * not pasted where it would answer a dialog, and the event is tried again.
 */
export async function untilReady(ctx: ContextNeeds<"accepting" | "now" | "readyAt" | "routing", "events" | "runner">, record: SessionRecord): Promise<void> {
  const runner = ctx.options.runner;
  let adapter: HarnessAdapter | undefined;
  try {
    adapter = adapterOf(ctx, record.harness);
  } catch {
    adapter = undefined;
  }
  const readyPattern = adapter?.readyPattern;
  if (readyPattern === undefined || runner.screen === undefined) return startupGrace(ctx, record);
  const target = record.tmuxTarget;
  const outcome = await awaitReady({
    rule: { readyPattern, ...(adapter?.blockedPattern ? { blockedPattern: adapter.blockedPattern } : {}) },
    screen: async () => {
      try {
        return await runner.screen?.(target);
      } catch (error) {
        if (error instanceof SessionMissingError) return undefined;
        throw error;
      }
    },
    boundMs: ctx.routing.tmux.readyTimeoutSeconds * 1000,
    keepWaiting: () => ctx.accepting,
  });
  ctx.readyAt.delete(target);
  if (outcome.ready) return;
  const blocked = outcome.state === "blocked";
  ctx.options.events.emit("session.not_ready", {
    work_item: record.workItem.ref,
    tmux_target: target,
    waited_ms: outcome.waitedMs,
    blocked,
    screen: outcome.tail.slice(-600),
  });
  throw new HarnessNotReadyError(target, outcome.waitedMs, blocked);
}

/**
 * A harness that has just started may not read its terminal yet (a TUI sets up bracketed paste
 * first); input pasted before that can be split into lines or lost. Only this work item waits.
 */
async function startupGrace(ctx: ContextNeeds<"now" | "readyAt" | "routing">, record: SessionRecord): Promise<void> {
  const graceMs = ctx.routing.tmux.startupGraceSeconds * 1000;
  // The record's mark says when a harness another process started came up; readyAt, one started here.
  const startedAt = Math.max(Date.parse(record.createdAt), record.harnessStartedAt === undefined ? 0 : Date.parse(record.harnessStartedAt) || 0);
  const readyAt = Math.max(startedAt + graceMs, ctx.readyAt.get(record.tmuxTarget) ?? 0);
  const wait = readyAt - ctx.now().getTime();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait, graceMs)));
  ctx.readyAt.delete(record.tmuxTarget);
}

function markStarted(ctx: ContextNeeds<"now" | "readyAt" | "routing">, target: string): void {
  ctx.readyAt.set(target, ctx.now().getTime() + ctx.routing.tmux.startupGraceSeconds * 1000);
}

/** What the harness would ask a person before it starts; never fails the spawn it precedes. */
export async function prepareHarness(
  ctx: ContextNeeds<"routing", "prepareHarness" | "sessionEnv">,
  workItem: string,
  harness: string,
  cwd: string,
): Promise<void> {
  const { options } = ctx;
  await options.prepareHarness?.({
    workItem,
    harness,
    cwd,
    routing: ctx.routing,
    env: { ...process.env, ...options.sessionEnv(workItem) },
  });
}

/**
 * Notes on the record that the session's harness has been started (harnessStartedAt, and this
 * process as harnessStartedBy), with `extra` beside it, unless the record no longer holds this
 * session live — or, with `ifStartedAt`, unless another start was marked since (a compare-and-set:
 * of two processes finding one dead pane, one starts it again). Whether it did.
 */
export async function markHarnessStarted(
  ctx: ContextNeeds<"now" | "self", "registry">,
  session: SessionRecord,
  extra: { readonly harnessSessionId?: string; readonly credentialSha256?: string; readonly restarts?: number } = {},
  ifStartedAt?: { readonly startedAt: string | undefined },
): Promise<boolean> {
  let marked = false;
  await ctx.options.registry.update(session.workItem.ref, (current) => {
    if (!sameLiveSession(current, session)) return undefined;
    if (ifStartedAt !== undefined && current.harnessStartedAt !== ifStartedAt.startedAt) return undefined;
    marked = true;
    return { ...current, ...extra, harnessStartedAt: ctx.now().toISOString(), harnessStartedBy: { ...ctx.self } };
  });
  return marked;
}

/**
 * Whether the session `started` for was closed (by another process) while its harness was being
 * started; if so, that harness is ended again, whatever killHarnessOnClose says — it started
 * after the close and has done nothing worth keeping. The close marks the record first and ends
 * the harness after, so either that close found this harness running, or this check sees it closed.
 */
export async function endIfClosed(ctx: ContextNeeds<"routing", "events" | "registry" | "runner">, started: SessionRecord): Promise<boolean> {
  const { registry, runner, events } = ctx.options;
  const ref = started.workItem.ref;
  if (sameLiveSession(registry.get(ref), started)) return false;
  const tmux = ctx.routing.tmux;
  const result = await runner.terminate(started.tmuxTarget, {
    killHarness: true,
    graceMs: Math.round(tmux.harnessKillGraceSeconds * 1000),
    killSession: !tmux.keepSessionOnClose,
  });
  if (result.signal !== "none") {
    events.emit("session.harness_terminated", { work_item: ref, tmux_target: started.tmuxTarget, signal: result.signal });
  }
  return true;
}

/** What a respawn did: started the harness, found the session no longer live, or found another start marked since `record` was read. */
export type RespawnOutcome = "respawned" | "not-live" | "started-elsewhere";

/**
 * The pane died: start the harness again, resuming its conversation when it can; `prompt` is
 * its first input. The record is marked before the spawn, as a compare-and-set on the start
 * `record` knew: a claimer still starting this session (one slower than harnessStartBound) whose
 * spawn then meets this harness finds it taken over (startedByOther) instead of closing the
 * session under it, and of two processes finding one dead pane only one starts it again
 * (`started-elsewhere` for the other). `restart`: the supervision's restart in a row (noted on the record) and how the harness ended.
 */
export async function respawn(
  ctx: ContextNeeds<"accepting" | "now" | "readyAt" | "routing" | "self", "events" | "prepareHarness" | "registry" | "resumeProbeMs" | "runner" | "sessionEnv">,
  record: SessionRecord,
  prompt: string,
  restart?: { readonly attempt: number; readonly how: string },
): Promise<RespawnOutcome> {
  const { options } = ctx;
  const ref = record.workItem.ref;
  const adapter = adapterOf(ctx, record.harness);
  // A harness started again gets a credential of its own; the dead one's no longer proves anything.
  const credential = issueCredential();
  const extra = { credentialSha256: credential.sha256, ...(restart === undefined ? {} : { restarts: restart.attempt }) };
  if (!(await markHarnessStarted(ctx, record, extra, { startedAt: record.harnessStartedAt }))) {
    return sameLiveSession(options.registry.get(ref), record) ? "started-elsewhere" : "not-live";
  }
  await prepareHarness(ctx, ref, adapter.name, record.cwd);
  const spawnWith = async (argv: string[]): Promise<void> => {
    await options.runner.spawn({
      target: record.tmuxTarget,
      cwd: record.cwd,
      argv,
      env: { ...options.sessionEnv(ref), [SESSION_TOKEN_ENV]: credential.token },
      workItem: ref,
      harness: adapter.name,
    });
    markStarted(ctx, record.tmuxTarget);
  };
  // A harness started without the text in its argv is handed it as its first input.
  const handOver = async (inArgv: boolean): Promise<void> => {
    if (inArgv) return;
    await untilReady(ctx, record);
    await pasteIntoPane(ctx, record, prompt);
  };
  const canResume = ctx.routing.tmux.resumeOnRespawn && adapter.resume && isResumableSessionId(record.harnessSessionId);
  if (canResume && adapter.resume) {
    try {
      await spawnWith(adapter.resume({ sessionId: record.harnessSessionId, prompt, workItem: ref }));
      await new Promise((resolve) => setTimeout(resolve, options.resumeProbeMs ?? 1_500));
      if ((await options.runner.probe(record.tmuxTarget)) === "live") {
        options.events.emit("session.respawned", {
          work_item: ref,
          tmux_target: record.tmuxTarget,
          harness_session_id: record.harnessSessionId,
          resumed: true,
          ...(restart === undefined ? {} : { restart: restart.attempt, how: restart.how }),
        });
        await handOver(adapter.promptInArgv.resume);
        return "respawned";
      }
      throw new Error("the resumed harness exited at once");
    } catch (error) {
      // A harness another process started meanwhile: no resume failed, and none is to be made.
      if (error instanceof TargetLiveError) throw error;
      options.events.emit("session.resume_failed", {
        work_item: ref,
        tmux_target: record.tmuxTarget,
        error: messageOf(error),
      });
    }
  }
  const sessionId = newHarnessSessionId();
  const startedAt = new Date();
  await spawnWith(adapter.fresh({ sessionId, prompt, workItem: ref }));
  await markHarnessStarted(ctx, record, { harnessSessionId: sessionId });
  const learned = await learnHarnessSessionId(ctx, adapter, { ...record, harnessSessionId: sessionId }, record.cwd, startedAt);
  options.events.emit("session.respawned", {
    work_item: ref,
    tmux_target: record.tmuxTarget,
    harness_session_id: learned,
    resumed: false,
    ...(restart === undefined ? {} : { restart: restart.attempt, how: restart.how }),
  });
  await handOver(adapter.promptInArgv.fresh);
  return "respawned";
}
