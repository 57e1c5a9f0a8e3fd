import { SessionMissingError, TargetLiveError } from "../../src/harness/runner.js";
import type { PaneState, SessionRunner, SpawnRequest, TerminateOptions, TerminateResult } from "../../src/harness/runner.js";

/**
 * An in-memory SessionRunner: one pane per tmux target, each live, dead or absent, and a record
 * of every call. It keeps the contract of the real runner — spawning over a live pane throws
 * TargetLiveError, delivering to a pane that is not live throws SessionMissingError — and can be
 * told, per target, what its next spawn or delivery does: fail, start a harness that exits at
 * once, or wait on a gate the test opens.
 */

export interface FakePane {
  state: PaneState;
  /** The request that last started this pane; undefined for a pane put there by the test. */
  request?: SpawnRequest;
  /** Texts delivered into this pane, in order. */
  readonly inputs: string[];
}

/** A spawn the test holds: `entered` resolves when the runner reaches it, `release` lets it finish. */
export interface Gate {
  readonly entered: Promise<void>;
  readonly isEntered: () => boolean;
  release(): void;
}

type SpawnStep =
  | { readonly kind: "fail"; readonly error: Error }
  | { readonly kind: "exit" }
  | { readonly kind: "hold"; readonly gate: Gate; readonly arrive: () => void; readonly wait: Promise<void> };

type DeliverStep = { readonly kind: "fail"; readonly error: Error };

export class FakeRunner implements SessionRunner {
  readonly panes = new Map<string, FakePane>();
  /** Every spawn request, in call order, including the ones that failed. */
  readonly spawnRequests: SpawnRequest[] = [];
  /** Every delivery that reached a live pane, in order. */
  readonly delivered: { readonly target: string; readonly text: string }[] = [];
  readonly terminated: { readonly target: string; readonly options: TerminateOptions }[] = [];
  readonly probed: string[] = [];
  /** Every interrupt sent to a live pane: its target and keys, in order. */
  readonly interrupted: { readonly target: string; readonly keys: string }[] = [];
  /** Every delivery that found no live pane (and threw SessionMissingError), by target, in order. */
  readonly missed: string[] = [];
  /** `spawn-start <target>`, `spawn-end <target>`, `deliver <target>`: the order things happened in. */
  readonly log: string[] = [];
  /** The most spawns that were in progress at one moment. */
  maxConcurrentSpawns = 0;
  private spawning = 0;
  private readonly spawnSteps = new Map<string, SpawnStep[]>();
  private readonly deliverSteps = new Map<string, DeliverStep[]>();

  // ---- what the test sets up --------------------------------------------------------------

  /** The next spawn on `target` throws `error` and leaves the pane as it was. */
  failSpawn(target: string, error: Error = new Error("tmux new-session failed: server exited unexpectedly")): void {
    this.push(this.spawnSteps, target, { kind: "fail", error });
  }

  /** The next spawn on `target` starts a harness that exits at once: the pane is dead by the time anyone looks. */
  exitOnSpawn(target: string): void {
    this.push(this.spawnSteps, target, { kind: "exit" });
  }

  /** The next spawn on `target` waits until the returned gate is released. */
  holdSpawn(target: string): Gate {
    let arrive!: () => void;
    let release!: () => void;
    let entered = false;
    const arrived = new Promise<void>((resolve) => {
      arrive = () => {
        entered = true;
        resolve();
      };
    });
    const wait = new Promise<void>((resolve) => (release = resolve));
    const gate: Gate = { entered: arrived, isEntered: () => entered, release };
    this.push(this.spawnSteps, target, { kind: "hold", gate, arrive, wait });
    return gate;
  }

  /** The next delivery to `target` throws `error` (the pane is left as it is). */
  failDeliver(target: string, error: Error = new Error("tmux paste-buffer failed")): void {
    this.push(this.deliverSteps, target, { kind: "fail", error });
  }

  /** A pane the-loop did not start (another tool, an earlier daemon). */
  startPane(target: string, state: PaneState = "live"): void {
    this.panes.set(target, { state, inputs: [] });
  }

  /** The harness in `target` exits; with remain-on-exit the pane stays, dead. */
  killPane(target: string): void {
    const pane = this.panes.get(target);
    if (pane) pane.state = "dead";
  }

  /** The texts pasted into `target`, in order (a prompt handed over in a spawn argv is not among them). */
  inputsOf(target: string): string[] {
    return [...(this.panes.get(target)?.inputs ?? [])];
  }

  spawnsOf(target: string): SpawnRequest[] {
    return this.spawnRequests.filter((request) => request.target === target);
  }

  stateOf(target: string): PaneState {
    return this.panes.get(target)?.state ?? "absent";
  }

  // ---- the SessionRunner interface --------------------------------------------------------

  async spawn(request: SpawnRequest): Promise<void> {
    const copy: SpawnRequest = { ...request, argv: [...request.argv], env: { ...request.env } };
    this.spawnRequests.push(copy);
    this.log.push(`spawn-start ${request.target}`);
    this.spawning += 1;
    this.maxConcurrentSpawns = Math.max(this.maxConcurrentSpawns, this.spawning);
    try {
      let step = this.spawnSteps.get(request.target)?.shift();
      if (step?.kind === "hold") {
        step.arrive();
        await step.wait;
        step = this.spawnSteps.get(request.target)?.shift();
      }
      if (step?.kind === "fail") throw step.error;
      if (this.stateOf(request.target) === "live") throw new TargetLiveError(request.target);
      const previous = this.panes.get(request.target);
      this.panes.set(request.target, {
        state: step?.kind === "exit" ? "dead" : "live",
        request: copy,
        inputs: previous?.inputs ?? [],
      });
    } finally {
      this.spawning -= 1;
      this.log.push(`spawn-end ${request.target}`);
    }
  }

  async interrupt(target: string, keys: string): Promise<void> {
    const pane = this.panes.get(target);
    if (pane?.state !== "live") throw new SessionMissingError(target, pane?.state ?? "absent");
    this.interrupted.push({ target, keys });
  }

  async pasteText(target: string, text: string): Promise<void> {
    const step = this.deliverSteps.get(target)?.shift();
    if (step) throw step.error;
    const pane = this.panes.get(target);
    if (!pane || pane.state !== "live") {
      this.missed.push(target);
      throw new SessionMissingError(target, pane?.state ?? "absent");
    }
    pane.inputs.push(text);
    this.delivered.push({ target, text });
    this.log.push(`paste ${target}`);
  }

  async probe(target: string): Promise<PaneState> {
    this.probed.push(target);
    return this.stateOf(target);
  }

  async terminate(target: string, options: TerminateOptions): Promise<TerminateResult> {
    this.terminated.push({ target, options });
    const pane = this.panes.get(target);
    const wasLive = pane?.state === "live";
    if (pane && options.killHarness) pane.state = "dead";
    if (options.killSession) this.panes.delete(target);
    return { signal: wasLive && options.killHarness ? "SIGTERM" : "none", keptSession: !options.killSession && pane !== undefined };
  }

  private push<T>(steps: Map<string, T[]>, target: string, step: T): void {
    const list = steps.get(target) ?? [];
    list.push(step);
    steps.set(target, list);
  }
}
