import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { messageOf } from "../errors.js";
import type { PasteOptions, SessionRunner, SpawnRequest, TerminateOptions } from "../harness/runner.js";
import type { WatchdogSpec } from "./watchdog-spec.js";

/**
 * Starting a session's watchdog (watchdog-main.ts) beside its harness, and the runner that does
 * so at every spawn of a session on a shared database (docs/scale.md, "Fencing").
 *
 * Where it runs, and why: a detached child of the daemon, in a process group and session of its
 * own (setsid) — not a second window of the session's tmux, where a person attached to it, or the
 * tmux server's own end, would take it with the session, and never inside the agent's sandbox,
 * whose PID namespace hides it from the agent (with routing.sandbox.mode off the agent runs as the
 * same user and could signal it: the fence is then only as strong as the agent's manners). A
 * `kill -9` of the daemon leaves it running, which is the point. Its environment is PATH, HOME,
 * LANG and the tmux locators alone; the database's URL reaches it on its stdin, which it reads once.
 */

/** The program, next to this module once built (dist/adoption/); from the sources, the built copy. */
export function watchdogProgram(): string {
  const beside = fileURLToPath(new URL("./watchdog-main.js", import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL("../../dist/adoption/watchdog-main.js", import.meta.url));
}

const PASSED = ["PATH", "HOME", "LANG", "LC_ALL", "TMUX_TMPDIR", "TZ"];

/** Starts one watchdog for `spec`, detached; resolves once its spec is handed over. Its pid. */
export async function startWatchdog(spec: WatchdogSpec, program: string = watchdogProgram()): Promise<number> {
  const env = Object.fromEntries(PASSED.flatMap((name) => (process.env[name] !== undefined ? [[name, process.env[name]]] : [])));
  const child = spawn(process.execPath, [program], { detached: true, stdio: ["pipe", "ignore", "ignore"], env });
  const started = new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.once("spawn", () => resolve(child.pid ?? 0));
  });
  const pid = await started;
  await new Promise<void>((resolve, reject) => {
    child.stdin?.once("error", reject);
    child.stdin?.end(`${JSON.stringify(spec)}\n`, () => resolve());
  });
  child.unref();
  return pid;
}

/** How long a watchdog waits for the session it was started for: longer than a spawn's tmux calls take (10 s each at most). */
export const WATCHDOG_APPEAR_MS = 60_000;

/** What a watched runner knows of the sessions it starts watchdogs for. */
export interface WatchdogSettings {
  readonly url: string;
  /** This daemon's name: the owner its sessions' leases must name. */
  readonly owner: string;
  readonly socketName?: string;
  readonly killGraceMs: number;
  readonly leaseMs: number;
  readonly logFile?: string;
  readonly warn: (message: string) => void;
  /** Where the watchdog program is (tests); watchdogProgram() by default. */
  readonly program?: string;
}

/**
 * A SessionRunner that starts a watchdog for every harness it spawns (a first start, and every
 * restart: a watchdog exits once the harness it watched is no longer live). A watchdog that cannot
 * be started leaves the session unfenced, which is said once per spawn; the spawn stands.
 */
export class WatchedRunner implements SessionRunner {
  readonly screen?: SessionRunner["screen"];
  readonly exitOf?: SessionRunner["exitOf"];
  readonly interrupt?: SessionRunner["interrupt"];

  constructor(
    private readonly inner: SessionRunner,
    private readonly settings: WatchdogSettings,
  ) {
    const { screen, exitOf, interrupt } = inner;
    if (screen) this.screen = (target) => screen.call(inner, target);
    if (exitOf) this.exitOf = (target) => exitOf.call(inner, target);
    if (interrupt) this.interrupt = (target, keys) => interrupt.call(inner, target, keys);
  }

  /**
   * The watchdog first, then the harness: a daemon killed between the two leaves a watchdog
   * waiting for a session that never comes (it gives up after WATCHDOG_APPEAR_MS), never a
   * harness that nothing fences.
   */
  async spawn(request: SpawnRequest): Promise<void> {
    if (request.workItem !== undefined) {
      const { url, owner, socketName, killGraceMs, leaseMs, logFile, program } = this.settings;
      try {
        await startWatchdog(
          {
            url,
            item: request.workItem,
            owner,
            target: request.target,
            killGraceMs,
            leaseMs,
            appearWithinMs: WATCHDOG_APPEAR_MS,
            ...(socketName !== undefined ? { socketName } : {}),
            ...(logFile !== undefined ? { logFile } : {}),
          },
          program,
        );
      } catch (error) {
        this.settings.warn(`the session ${request.target} runs without its watchdog (a lost daemon would not end it): ${messageOf(error)}`);
      }
    }
    await this.inner.spawn(request);
  }

  pasteText(target: string, text: string, options?: PasteOptions): Promise<void> {
    return this.inner.pasteText(target, text, options);
  }

  probe(target: string): ReturnType<SessionRunner["probe"]> {
    return this.inner.probe(target);
  }

  terminate(target: string, options: TerminateOptions): ReturnType<SessionRunner["terminate"]> {
    return this.inner.terminate(target, options);
  }
}
