import { controlStateOf, spawnHold } from "../control/plan.js";
import type { SpawnHold } from "../control/plan.js";
import type { ControlRecord } from "../control/types.js";
import { messageOf } from "../errors.js";
import { newHarnessSessionId } from "../harness/adapters.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import { ProgramNotFoundError, TargetLiveError } from "../harness/runner.js";
import { deliveryKeys } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import { standingState } from "../routing/router.js";
import { chooseHarness } from "../routing/harness-choice.js";
import type { WorkspaceRequest } from "../workspace/provider.js";
import type { WorkItem } from "../workitem/index.js";
import { hostOf, parseWorkItemRef, repositoryOf, workItemSlug } from "../workitem/index.js";
import { RETRY, SESSION_CLOSED, SETTLED, adapterOf, dispatchFailed, sameCommand, sameLiveSession, settle, withSlot } from "../sessions/context.js";
import type { ContextNeeds, HandleResult, SpawnOutcome, StartTrigger, Turn } from "../sessions/context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { deliverEvent, paste, promptInput, recordLink } from "../sessions/delivery.js";
import { SESSION_TOKEN_ENV, issueCredential, issueForClaim, takeClaimedToken } from "../sessions/credential.js";
import { graphAtStart } from "../graph-driver/start-claim-force.js";
import { announceSpawned, atPoint, inputReceived, launchPoint, refuse, refuseLaunch, startRefusal } from "../sessions/hook-points.js";
import type { PoolSlot } from "../sessions/keyed-queue.js";
import { boundedInputText, deliveredInputKind } from "../sessions/lifecycle.js";
import { endIfClosed, markHarnessStarted, prepareHarness } from "../sessions/pane.js";
import { learnHarnessSessionId } from "../sessions/harness-id.js";
import { renderBootPrompt } from "../sessions/prompts.js";
import { carriedFrom, isLive, tmuxTargetFor } from "../registry/record.js";
import type { SessionRecord, SessionWorkspace } from "../registry/record.js";
import type { ClaimResult } from "../registry/registry.js";
import { announceQueued, claimWithinLimits } from "./slots.js";
import type { Queued } from "./slots.js";

/**
 * Starting a session: the claim (under the item's control lock, where the start gate is checked
 * again), then — once the claim is won — the checkout, the harness with its boot prompt, the
 * mark that it runs, the announcement. A start command claims under its own transaction
 * (commands) and shares the rest (startClaimed).
 */

/**
 * Why a claimer's event is settled without a spawn of its own: its spawn met the harness another
 * process started for the same session after waiting past harnessStartBound (see startClaimed).
 */
const HARNESS_STARTED_ELSEWHERE = "harness-started-elsewhere";

/**
 * A spawn the router decided on (the spawn policy arms the item and the start gate let it
 * through). The claim is made inside the item's control transaction, where the gate is checked
 * again: a stop from another process (the CLI) between the decision and the claim either comes
 * first — and holds this spawn — or finds the claimed session and closes it. Never both missed.
 */
export async function spawn(
  ctx: PasteContext &
    ContextNeeds<"forget" | "hooks" | "inputSeen" | "policy" | "react" | "templates", "control" | "graph" | "links" | "spawnCwd" | "stateRootTag" | "trackers">,
  turn: Turn,
  slot: PoolSlot,
  trigger: StartTrigger = "event",
): Promise<SpawnOutcome> {
  const { workItem, event } = turn;
  const { registry, control } = ctx.options;
  // The harness an operator's standing start chose, else the labels' or the default (routing/harness-choice.ts).
  const standingStart = standingStartRecord(ctx, workItem.ref);
  const choice = chooseHarness(ctx.routing, { chosen: standingStart?.harness, labels: event.labels });
  if ("refused" in choice) {
    spawnFailed(ctx, turn, standingStart?.harness ?? ctx.routing.defaultHarness, choice.refused);
    return { kind: "failed", error: choice.refused, retry: false };
  }
  const harnessName = choice.harness;
  const adapter = resolveAdapter(ctx, turn, harnessName);
  if (typeof adapter === "string") return { kind: "failed", error: adapter, retry: false };
  // A live session means this event is its input (the claim below says so): nothing starts.
  // Not even read when no hook runs here, so a dispatch without hooks does what it always did.
  const observed = ctx.hooks.handles("work_item_start") || ctx.hooks.handles("input_received");
  if (observed && !isLive(registry.get(workItem.ref))) {
    // The command standing when the hook was asked: a refusal disarms the item only if it still stands.
    const asked = control.get(workItem.ref);
    const refusal = await atPoint(ctx, slot, "work_item_start", () => startRefusal(ctx, turn, trigger, harnessName));
    if (refusal !== undefined) {
      return await refuse(ctx, turn, "work_item_start", refusal, (current) => sameCommand(current, asked));
    }
    // A comment that starts a session is delivered as its boot prompt.
    const inputKind = deliveredInputKind(event, undefined);
    if (inputKind !== undefined) {
      await atPoint(ctx, slot, "input_received", () => inputReceived(ctx, workItem, event, { kind: inputKind, text: boundedInputText(event.body) }));
    }
  }
  const gated = await control.transaction(
    workItem.ref,
    async (
      tx,
    ): Promise<{ readonly hold: SpawnHold } | { readonly queued: Queued } | { readonly claim: ClaimResult; readonly standing: ControlRecord | undefined }> => {
      const standing = tx.read();
      const hold = spawnHold(standingState(standing, ctx.policy), ctx.policy.control);
      if (hold !== undefined) return { hold };
      // A full cap (routing.limits) queues the start instead of claiming.
      const claim = await claimWithinLimits(
        ctx,
        workItem.ref,
        harnessName,
        { labels: event.labels, bootNote: event.bootNote, branch: event.checkoutBranch },
        () => claimSession(ctx, workItem, event, harnessName),
      );
      return "queued" in claim ? claim : { claim, standing };
    },
  );
  if ("hold" in gated) return { kind: "held", hold: gated.hold };
  if ("queued" in gated) {
    await announceQueued(ctx, turn, harnessName, gated.queued);
    return { kind: "held", hold: "queued" };
  }
  const { claim, standing } = gated;
  if (!claim.claimed) return { kind: "occupied", occupant: claim.record };
  ctx.react(event, "started");
  const started = await startClaimed(ctx, turn, adapter, claim.record, slot, (current) => sameCommand(current, standing));
  if (started.kind === "started") await confirmPendingStart(ctx, turn);
  if (started.kind === "failed") await markStandingStartPending(ctx, turn);
  return started;
}

/**
 * The item's standing start, when its control record is one: what an operator's start chose for
 * it. A record that cannot be read chooses nothing here; the control transaction below meets it
 * and stops the spawn with its own error.
 */
function standingStartRecord(ctx: ContextNeeds<never, "control">, ref: string): ControlRecord | undefined {
  try {
    const record = ctx.options.control.get(ref);
    // A resume carries a start's choice only when it released a queued start (docs/fleet.md).
    return record?.command === "start" || record?.command === "resume" ? record : undefined;
  } catch {
    // Damaged: the transaction reports it (see above).
    return undefined;
  }
}

/** A spawn that did not happen: recorded, and the comment it came from marked as failed. */
export function spawnFailed(ctx: ContextNeeds<"react">, turn: Turn, harness: string, error: string): void {
  turn.events.emit("session.spawn_failed", { harness, error });
  ctx.react(turn.event, "failed");
}

/** The harness adapter, or (reported) why it cannot be had: a configuration problem no retry fixes. */
function resolveAdapter(ctx: ContextNeeds<"react" | "routing">, turn: Turn, harnessName: string): HarnessAdapter | string {
  try {
    return adapterOf(ctx, harnessName);
  } catch (error) {
    spawnFailed(ctx, turn, harnessName, messageOf(error));
    return messageOf(error);
  }
}

/** Claims the item's session record for a new session, unless one is live (then: the occupant). */
export function claimSession(
  ctx: ContextNeeds<"now" | "self", "registry" | "spawnCwd" | "stateRootTag">,
  workItem: WorkItem,
  event: InboundEvent,
  harnessName: string,
): Promise<ClaimResult> {
  const { options } = ctx;
  const at = ctx.now().toISOString();
  const target = tmuxTargetFor(workItemSlug(parseWorkItemRef(workItem.ref)), options.stateRootTag);
  const sessionId = newHarnessSessionId();
  const credentialSha256 = issueForClaim(sessionId);
  const claimed = options.registry.claim(workItem, (previous) => ({
    version: 1,
    workItem: { ...workItem },
    harness: harnessName,
    harnessSessionId: sessionId,
    cwd: options.spawnCwd,
    status: "active",
    createdAt: at,
    lastEventAt: at,
    tmuxTarget: target,
    recentDeliveries: [...deliveryKeys(event)],
    url: workItem.url,
    claimedBy: { ...ctx.self },
    credentialSha256,
    ...carriedFrom(previous),
  }));
  // A claim lost to a live session (or failed) never starts a harness: its token is dropped.
  void claimed.then(
    (result) => {
      if (!result.claimed) takeClaimedToken({ harnessSessionId: sessionId });
    },
    () => takeClaimedToken({ harnessSessionId: sessionId }),
  );
  return claimed;
}

/**
 * The rest of a spawn once the claim is won, shared by an event's spawn and a start command:
 * the checkout, the harness with the boot prompt, the announcement. A failure closes the claim
 * again (`spawn-failed`, which leaves a standing start record pending).
 */
export async function startClaimed(
  ctx: PasteContext &
    ContextNeeds<"forget" | "hooks" | "policy" | "react" | "templates", "control" | "graph" | "links" | "spawnCwd" | "stateRootTag" | "trackers">,
  turn: Turn,
  adapter: HarnessAdapter,
  claimed: SessionRecord,
  slot: PoolSlot,
  /** Whether the item's control record is still the one this start went by (see refuse). */
  unchanged: (current: ControlRecord | undefined) => boolean,
): Promise<SpawnOutcome> {
  const { workItem, event } = turn;
  const { registry, runner, sessionEnv } = ctx.options;
  const routing = ctx.routing;
  const harnessName = claimed.harness;
  const target = claimed.tmuxTarget;
  // Only after the claim: of two processes spawning for one item, only the winner prepares.
  const prepared = await prepareWorkspace(ctx, turn, harnessName, claimed);
  if ("failed" in prepared) return { kind: "failed", error: prepared.failed, retry: true };
  if ("closed" in prepared) {
    settle(turn, SESSION_CLOSED);
    return { kind: "closed" };
  }
  const cwd = prepared.cwd;

  // The item's graph run begins (or goes on) before the harness starts: its assignment is part of the boot prompt.
  const graphBoot = await graphAtStart(ctx, turn, cwd);
  const rendered = renderBootPrompt(ctx.templates, { ...(await promptInput(ctx, workItem, event)), graphContext: graphBoot?.context ?? "" });
  const bootPrompt = [rendered, graphBoot?.text, event.bootNote].filter((part) => part !== undefined).join("\n\n");
  const launch = await launchPoint(ctx, turn, slot, claimed, cwd, bootPrompt);
  if (launch.refusal !== undefined) return await refuseLaunch(ctx, turn, claimed, launch.refusal, unchanged);
  const prompt = launch.prompt;
  const harnessStartedAt = new Date();
  try {
    await prepareHarness(ctx, workItem.ref, adapter.name, cwd);
    // The session's credential is on its record before its harness can present it: written with
    // the claim when this process made it, else here.
    let token = takeClaimedToken(claimed);
    if (token === undefined) {
      const credential = issueCredential();
      await registry.update(workItem.ref, (record) => (sameLiveSession(record, claimed) ? { ...record, credentialSha256: credential.sha256 } : undefined));
      token = credential.token;
    }
    await runner.spawn({
      target,
      cwd,
      argv: adapter.fresh({ sessionId: claimed.harnessSessionId, prompt, workItem: workItem.ref }),
      env: { ...sessionEnv(workItem.ref), [SESSION_TOKEN_ENV]: token },
      workItem: workItem.ref,
      harness: adapter.name,
    });
  } catch (error) {
    const elsewhere = error instanceof TargetLiveError ? startedByOther(ctx, claimed) : undefined;
    if (elsewhere !== undefined) return await startedElsewhere(ctx, turn, elsewhere, slot);
    await registry.close(workItem.ref, "spawn-failed", ctx.now());
    const remedy =
      error instanceof ProgramNotFoundError
        ? `; install it, or point routing.harnesses.${harnessName}.command at it (or choose another routing.defaultHarness)`
        : error instanceof TargetLiveError
          ? // Another project, or a person, may own it: never advise ending it.
            ` (no live session record here names it, and it may belong to another project on this tmux server, so it is left alone; see what runs in it with \`tmux${
              routing.tmux.socketName ? ` -L ${routing.tmux.socketName}` : ""
            } attach -r -t =${target}\`, or give this project a tmux server of its own with routing.tmux.socketName)`
          : "";
    const message = `${messageOf(error)}${remedy}`;
    spawnFailed(ctx, turn, harnessName, message);
    ctx.forget(event);
    // Neither comes right by trying again at once; the next event for the item tries afresh.
    return { kind: "failed", error: message, retry: !(error instanceof TargetLiveError || error instanceof ProgramNotFoundError) };
  }
  // From here on a pane missing from tmux is a dead harness, not one still being started.
  try {
    await markHarnessStarted(ctx, claimed);
  } catch (error) {
    // The harness runs regardless; without the mark, a delivery that finds its pane gone waits
    // out harnessStartBound before it takes the harness for dead.
    dispatchFailed(turn.events, "spawn", `the harness started, but its session record could not note it: ${messageOf(error)}`);
  }
  if (await endIfClosed(ctx, claimed)) {
    settle(turn, SESSION_CLOSED);
    return { kind: "closed" };
  }
  const harnessSessionId = await learnHarnessSessionId(ctx, adapter, claimed, cwd, harnessStartedAt);
  if (!adapter.promptInArgv.fresh) await bootAsInput(ctx, turn, claimed, prompt);
  graphBoot?.delivered();
  turn.events.emit("session.spawned", {
    harness: harnessName,
    harness_session_id: harnessSessionId,
    tmux_target: target,
    cwd,
  });
  ctx.react(event, "completed");
  await recordLink(ctx, turn);
  await announceSpawned(ctx, turn, { ...claimed, cwd }, slot, routing.announce.enabled);
  return { kind: "started", record: claimed };
}

/**
 * The claimed session, if its spawn met a harness another process started for it: still live,
 * and marked started by someone else (this claimer marks only after its own spawn succeeds).
 * That happens when a delivery waited past harnessStartBound for this claimer and took it for
 * dead (see paste). Undefined when the record cannot be read: the spawn then fails as it would.
 */
function startedByOther(ctx: ContextNeeds<never, "registry">, claimed: SessionRecord): SessionRecord | undefined {
  try {
    const current = ctx.options.registry.get(claimed.workItem.ref);
    return current !== undefined && sameLiveSession(current, claimed) && current.harnessStartedAt !== undefined ? current : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The end of a start whose harness another process started (startedByOther). Closing the
 * session would leave that harness running for a closed record, so the session stays as it is.
 * The harness got the other process's event as its prompt, not this one's boot prompt: the event
 * is settled as harness-started-elsewhere. The announcement and a PR binding are still this
 * start's to make.
 */
async function startedElsewhere(
  ctx: ContextNeeds<"hooks" | "now" | "react" | "routing", "events" | "links" | "registry" | "trackers">,
  turn: Turn,
  session: SessionRecord,
  slot: PoolSlot,
): Promise<SpawnOutcome> {
  settle(turn, HARNESS_STARTED_ELSEWHERE);
  ctx.react(turn.event, "completed");
  await recordLink(ctx, turn);
  await announceSpawned(ctx, turn, session, slot, ctx.routing.announce.enabled);
  return { kind: "started", record: session };
}

/**
 * The session's working directory: its own checkout when a workspace provider gives one (the
 * record then names it, so a respawn and the close find it), else spawnCwd. `failed` instead
 * when the checkout failed (the claim is closed again, reported), `closed` when the session was
 * closed meanwhile (`the-loop sessions close` during a long clone) — that close could not
 * release a checkout it did not know of, so this does, and no harness is started for a closed
 * session.
 */
async function prepareWorkspace(
  ctx: ContextNeeds<"forget" | "now" | "react" | "routing", "registry" | "spawnCwd" | "workspaces">,
  turn: Turn,
  harnessName: string,
  claimed: SessionRecord,
): Promise<{ readonly cwd: string } | { readonly failed: string } | { readonly closed: true }> {
  const { workItem, event } = turn;
  const { workspaces: provider, registry, spawnCwd } = ctx.options;
  if (provider === undefined || !ctx.routing.workspace.enabled) return { cwd: spawnCwd };
  let workspace: SessionWorkspace | undefined;
  let recorded = false;
  try {
    workspace = await provider.prepare(workItem, workspaceRequest(workItem, event));
    if (workspace === undefined) return { cwd: spawnCwd };
    const made = workspace;
    await registry.update(workItem.ref, (record) => {
      if (!sameLiveSession(record, claimed)) return undefined;
      recorded = true;
      return { ...record, cwd: made.checkout, workspace: made };
    });
  } catch (error) {
    await registry.close(workItem.ref, "spawn-failed", ctx.now());
    const message = `its checkout could not be prepared: ${messageOf(error)}`;
    spawnFailed(ctx, turn, harnessName, message);
    ctx.forget(event);
    return { failed: message };
  }
  if (recorded) return { cwd: workspace.checkout };
  // A session claimed anew by another process prepares this same checkout for itself: leave it be.
  if (!isLive(registry.get(workItem.ref))) await provider.release(workItem.ref, workspace);
  return { closed: true };
}

/**
 * What to check out: the pull request's head when the session is for the PR or for an item of
 * the same repository it is linked to (a branch name means nothing in another repository), else
 * the branch a start the-loop gave itself names (an adoption's: the lost host's pull request branch).
 */
function workspaceRequest(workItem: WorkItem, event: InboundEvent): WorkspaceRequest {
  const pullRequest = event.pullRequest;
  if (pullRequest?.headBranch === undefined) return event.checkoutBranch === undefined ? {} : { branch: event.checkoutBranch };
  if (pullRequest.ref !== workItem.ref) {
    const own = parseWorkItemRef(pullRequest.ref);
    if (hostOf(own) !== workItem.host || repositoryOf(own) !== workItem.repository) return {};
  }
  return pullRequest.headInRepository === undefined
    ? { branch: pullRequest.headBranch }
    : { branch: pullRequest.headBranch, headInRepository: pullRequest.headInRepository };
}

/**
 * A command harness whose argv has no `{prompt}` is handed the boot prompt as its first input,
 * the same paste later events use, once it is ready. A failure is recorded; the session stays.
 */
async function bootAsInput(ctx: PasteContext, turn: Turn, claimed: SessionRecord, prompt: string): Promise<void> {
  const started = ctx.options.registry.get(turn.workItem.ref) ?? claimed;
  let outcome: string;
  try {
    outcome = await paste(ctx, started, prompt);
  } catch (error) {
    outcome = messageOf(error);
  }
  if (outcome === "pasted") return;
  dispatchFailed(
    turn.events,
    "spawn",
    `the harness started, but its boot prompt could not be handed to it as input (${outcome}); comment again to give it its task`,
  );
}

// ---- the standing start's record -------------------------------------------------------------

/**
 * A start whose spawn failed stays standing; its record says so (if it is still this start's,
 * or — without `deliveryId` — whichever start stands).
 */
export async function markStartPending(ctx: ContextNeeds<never, "control">, ref: string, deliveryId?: string): Promise<void> {
  await ctx.options.control.transaction(ref, async (tx) => {
    const current = tx.read();
    if (current?.command !== "start" || controlStateOf(current) !== "start-requested") return;
    if (deliveryId !== undefined && current.deliveryId !== deliveryId) return;
    if (current.effect === "start-pending") return;
    await tx.write({ ...current, effect: "start-pending" });
  });
}

/**
 * A spawn for an event (or a retried start) failed where a start stands that says it started —
 * one whose process was killed between its record and its claim: its record says pending now.
 * Nothing depends on this, so a failure is reported and no more.
 */
async function markStandingStartPending(ctx: ContextNeeds<never, "control">, turn: Turn): Promise<void> {
  const ref = turn.workItem.ref;
  try {
    const standing = ctx.options.control.get(ref);
    if (standing?.command !== "start" || standing.effect === "start-pending" || controlStateOf(standing) !== "start-requested") return;
    await markStartPending(ctx, ref);
  } catch (error) {
    dispatchFailed(turn.events, "control", `the spawn failed, and its standing start could not be marked pending: ${messageOf(error)}`);
  }
}

/**
 * A pending start whose session has now started (at the item's next event, or a retry): its
 * record says it started. Nothing depends on this, so a failure is reported and no more.
 */
async function confirmPendingStart(ctx: ContextNeeds<never, "control">, turn: Turn): Promise<void> {
  const { control } = ctx.options;
  const ref = turn.workItem.ref;
  try {
    const standing = control.get(ref);
    if (standing?.effect !== "start-pending" || controlStateOf(standing) !== "start-requested") return;
    await control.transaction(ref, async (tx) => {
      const current = tx.read();
      if (current?.effect !== "start-pending" || controlStateOf(current) !== "start-requested") return;
      await tx.write({ ...current, effect: "started" });
    });
  } catch (error) {
    dispatchFailed(turn.events, "control", `the session started, but its pending start record could not be updated: ${messageOf(error)}`);
  }
}

/** The router's spawn, and what its outcome leaves the event to (the session found running takes it as input). */
export async function spawnTurn(
  ctx: ContextNeeds<
    "accepting" | "forget" | "heavy" | "hooks" | "inputSeen" | "now" | "policy" | "react" | "readyAt" | "routing" | "self" | "templates" | "options"
  >,
  turn: Turn,
  held: ReadonlySet<string> | undefined,
): Promise<HandleResult> {
  const outcome = await withSlot(ctx, (slot) => spawn(ctx, turn, slot));
  switch (outcome.kind) {
    case "started":
    case "closed":
      return SETTLED;
    case "held":
      return settle(turn, outcome.hold);
    // Someone else (the CLI, another process) started it first: this event is input for that session.
    case "occupied":
      return await deliverEvent(ctx, outcome.occupant, turn);
    case "failed":
      return outcome.retry ? RETRY : SETTLED;
    case "refused":
      if (outcome.redirect !== undefined && (held === undefined || held.has(outcome.redirect.workItem.ref))) {
        return await deliverEvent(ctx, outcome.redirect, turn);
      }
      return settle(turn, "hook-refused");
  }
}
