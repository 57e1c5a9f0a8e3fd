import { clip, runBounded, type BoundedCommand, type BoundedResult } from "../subprocess/index.js";

/**
 * Whether bubblewrap works here: installed, and able to make the namespaces the plan asks for.
 * Only running it tells — a kernel may forbid unprivileged user namespaces (a sysctl, or
 * AppArmor's restrict_unprivileged_userns on Ubuntu 24.04) — so a sandbox with the plan's
 * namespace flags runs `true`, bounded. The answer is kept for the process: the machine does not
 * change under a running daemon often enough to pay a process per session.
 */

export type BubblewrapCheck =
  | {
      readonly available: true;
      readonly program: string;
      /** `bubblewrap 0.8.0`, as the program says it. */
      readonly version: string;
      /** `--disable-userns` works (bwrap ≥ 0.8): the plan can forbid nested user namespaces. */
      readonly denyNestedUserNamespaces: boolean;
    }
  | { readonly available: false; readonly reason: string };

export interface CheckOptions {
  /** The bwrap program (default `bwrap`, found on `PATH`). */
  readonly program?: string;
  /** The PATH bwrap is looked up on (default this process's). */
  readonly path?: string;
  readonly timeoutMs?: number;
  /** The runner (default runBounded); a test's fake. */
  readonly run?: (command: BoundedCommand) => Promise<BoundedResult>;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const PROBE_FLAGS = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--ro-bind", "/", "/"];

/** Runs the probe now (see the module comment). Never throws: a failure is the reason. */
export async function checkBubblewrap(options: CheckOptions = {}): Promise<BubblewrapCheck> {
  const program = options.program ?? "bwrap";
  const run = options.run ?? runBounded;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const env: Record<string, string> = { PATH: options.path ?? process.env.PATH ?? "/usr/bin:/bin" };
  const attempt = (args: readonly string[]): Promise<BoundedResult> => run({ argv: [program, ...args], cwd: "/", env, timeoutMs, outputCapBytes: 4096 });

  const version = await attempt(["--version"]);
  if (version.error !== undefined) return { available: false, reason: notInstalled(program, version.error) };
  if (version.timedOut) return { available: false, reason: `${program} --version did not answer within ${timeoutMs} ms` };

  const withDeny = await attempt(["--disable-userns", ...PROBE_FLAGS, "true"]);
  if (withDeny.exitCode === 0) return { available: true, program, version: version.stdout.trim(), denyNestedUserNamespaces: true };
  // bwrap before 0.8 does not know the option: the sandbox still works, without that one promise.
  if (/unknown option/i.test(withDeny.stderr)) {
    const plain = await attempt([...PROBE_FLAGS, "true"]);
    if (plain.exitCode === 0) return { available: true, program, version: version.stdout.trim(), denyNestedUserNamespaces: false };
    return { available: false, reason: failure(program, plain, timeoutMs) };
  }
  return { available: false, reason: failure(program, withDeny, timeoutMs) };
}

let cached: Promise<BubblewrapCheck> | undefined;

/**
 * checkBubblewrap's answer, asked once per process while it is yes. A no is asked again next
 * time: installing bubblewrap is the fix `status` gives, and it must not wait for a restart.
 */
export function bubblewrapAvailable(options: CheckOptions = {}): Promise<BubblewrapCheck> {
  const answer = (cached ??= checkBubblewrap(options));
  void answer.then((check) => {
    if (!check.available && cached === answer) cached = undefined;
  });
  return answer;
}

/** Forgets the kept answer (after installing bwrap, or in a test). */
export function forgetBubblewrapCheck(): void {
  cached = undefined;
}

function notInstalled(program: string, error: string): string {
  if (error.startsWith("command not found")) return `${program} is not installed (Debian/Ubuntu: apt-get install bubblewrap)`;
  return `${program} could not be started: ${error}`;
}

function failure(program: string, result: BoundedResult, timeoutMs: number): string {
  if (result.error !== undefined) return `${program} could not be started: ${result.error}`;
  if (result.timedOut) return `${program} did not finish a sandbox of \`true\` within ${timeoutMs} ms`;
  const said = clip(result.stderr.trim(), 400) || `exit status ${result.exitCode ?? result.signal ?? "unknown"}`;
  const hint = /namespace|uid map|permission denied|operation not permitted/i.test(said)
    ? " — this kernel does not let this user make user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0; on Ubuntu 24.04 an AppArmor profile for bwrap, or kernel.apparmor_restrict_unprivileged_userns=0)"
    : "";
  return `${program} cannot make a sandbox here: ${said}${hint}`;
}
