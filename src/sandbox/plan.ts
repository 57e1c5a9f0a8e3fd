import { posix } from "node:path";

/**
 * The bubblewrap plan of one session: a pure function from what the session needs to the argv of
 * `bwrap` that gives it exactly that (docs/security.md). Nothing here touches the file system; the
 * facts of the host it needs (is /bin a link?) come in as `system` (host.ts reads them).
 *
 * Inside the sandbox: the system read-only, a new /proc, a minimal /dev, a private /tmp, an empty
 * home with only the agent's config bound back, the worktree and the git directories it needs
 * read-write, the binds the operator named, exactly the environment given. Not inside: the state
 * root, the rest of the home, every other path of the host.
 *
 * A request that would undo that — a relative or unclean path, a bind inside or above the state
 * root, a bind that is the home or above it, two mounts on one target — is refused with a
 * SandboxPlanError naming the field, never repaired. A worktree that holds the state root (a
 * project folder whose `.the-loop` is inside it) is bound with the state root masked by an empty
 * tmpfs: the folder is the session's, the root in it is not.
 */

export type BindMode = "ro" | "rw";

export interface SandboxBind {
  /** The host path. */
  readonly source: string;
  /** Where it appears inside the sandbox. */
  readonly target: string;
  readonly mode: BindMode;
}

/** One entry of the host's system layout, bound read-only (or recreated as the same link). */
export type SystemEntry =
  | { readonly kind: "dir"; readonly path: string }
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "symlink"; readonly path: string; readonly to: string };

export interface SandboxRequest {
  /** The session's worktree: read-write. */
  readonly worktree: string;
  /**
   * What git needs for the worktree, read-write: for a linked worktree its admin directory and the
   * repository's common dir (`.git`); for a clone its `.git`.
   */
  readonly gitDirs: readonly string[];
  /** The home as the agent sees it: an empty tmpfs with only `agentConfig` bound back. */
  readonly home: string;
  /** The agent CLI's own config (`~/.claude.json`, `~/.claude`, CODEX_HOME, `~/.gemini`); a missing source is skipped. */
  readonly agentConfig: readonly SandboxBind[];
  /** Paths the operator named to bind in; a missing source fails the start. */
  readonly binds: readonly SandboxBind[];
  /**
   * Exactly the session's environment (bwrap adds PWD, set to `cwd`). Undefined: the environment
   * bwrap itself is started with, which its caller made exact — a tmux pane's, whose TERM only
   * the pane knows.
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The session's own socket folder, bound read-write at `target`: the one thing from inside the
   * state root the sandbox sees, and its only way to the-loop.
   */
  readonly sessionSocket?: { readonly source: string; readonly target: string };
  /** Symbolic links made inside the sandbox: the `the-loop` shim on the session's PATH. */
  readonly links?: readonly { readonly path: string; readonly to: string }[];
  /**
   * Files of the bound system shown empty (`/dev/null` bound over each): what only root may read
   * (`/etc/shadow`, the host's SSH keys), which a sandbox of root's would otherwise still read.
   */
  readonly hiddenFiles?: readonly string[];
  /** The harness command. */
  readonly argv: readonly string[];
  readonly cwd: string;
  /** The-loop's state root: never visible, so nothing may be bound from inside or above it but the worktree and git dirs. */
  readonly stateRoot: string;
  /** The host's system layout (host.ts `hostSystem`). */
  readonly system: readonly SystemEntry[];
  /**
   * The command runs on a terminal it must keep as its controlling one (a tmux pane that execs
   * bwrap itself). Without it the command gets a session of its own (`--new-session`), which takes
   * the terminal away: measured in a tmux pane, /dev/tty fails with ENXIO and a resize never
   * arrives as SIGWINCH. Keeping the terminal leaves TIOCSTI to the sandbox: it can push input
   * only into its own pane, which no program outside the sandbox reads when the pane runs bwrap
   * and nothing after it.
   */
  readonly terminal?: boolean;
  /** bwrap ≥ 0.8 can forbid the sandbox making user namespaces of its own (`--disable-userns`); default true. */
  readonly denyNestedUserNamespaces?: boolean;
  /** The bwrap program (default `bwrap`, found on the PATH). */
  readonly program?: string;
}

export class SandboxPlanError extends Error {
  override readonly name: string = "SandboxPlanError";
}

/** What the kernel and bwrap make there is the point: nothing is bound inside. (Inside the private /tmp is fine: it is mounted first.) */
const MADE_BY_THE_SANDBOX = ["/proc", "/dev"];

interface Mount {
  readonly flags: readonly string[];
  readonly target: string;
  readonly what: string;
}

/** The bwrap argv of a session: see the module comment. */
export function planBubblewrap(request: SandboxRequest): string[] {
  const worktree = cleanPath(request.worktree, "worktree");
  const home = cleanPath(request.home, "home");
  const stateRoot = cleanPath(request.stateRoot, "stateRoot");
  const cwd = cleanPath(request.cwd, "cwd");
  const gitDirs = request.gitDirs.map((dir, index) => cleanPath(dir, `gitDirs[${index}]`));
  const agentConfig = request.agentConfig.map((bind, index) => cleanBind(bind, `agentConfig[${index}]`));
  const binds = request.binds.map((bind, index) => cleanBind(bind, `binds[${index}]`));
  const system = request.system.map((entry, index) => cleanSystemEntry(entry, index));
  const socket = request.sessionSocket === undefined ? undefined : cleanSocket(request.sessionSocket);
  const links = (request.links ?? []).map((link, index) => cleanLink(link, index));
  const hidden = (request.hiddenFiles ?? []).map((path, index) => cleanPath(path, `hiddenFiles[${index}]`));

  // The worktree and git dirs may sit under the state root (<root>/workspaces): only the root and what is above it are closed to them.
  // A worktree above the state root gets the root masked instead (see the module comment).
  if (worktree === stateRoot) refuseAbove(worktree, stateRoot, "worktree", "the state root");
  const masksStateRoot = worktree !== stateRoot && within(stateRoot, worktree);
  refuseAbove(worktree, home, "worktree", "the home");
  gitDirs.forEach((dir, index) => {
    refuseAbove(dir, stateRoot, `gitDirs[${index}]`, "the state root");
    refuseAbove(dir, home, `gitDirs[${index}]`, "the home");
  });
  for (const [bind, field] of [
    ...agentConfig.map((bind, index) => [bind, `agentConfig[${index}]`] as const),
    ...binds.map((bind, index) => [bind, `binds[${index}]`] as const),
  ]) {
    refuseAbove(bind.source, stateRoot, field, "the state root");
    if (within(bind.source, stateRoot)) {
      throw new SandboxPlanError(`${field}: ${bind.source} is inside the state root ${stateRoot}, which no session may see`);
    }
    refuseAbove(bind.source, home, field, "the home");
  }
  if (socket !== undefined) refuseAbove(socket.source, stateRoot, "sessionSocket.source", "the state root");
  if (request.argv.length === 0 || request.argv[0] === "") throw new SandboxPlanError("argv: the sandbox needs a command to run");
  request.argv.forEach((arg, index) => {
    if (arg.includes("\0")) throw new SandboxPlanError(`argv[${index}] holds a NUL byte`);
  });
  for (const [name, value] of Object.entries(request.env ?? {})) {
    if (name === "" || name.includes("=") || name.includes("\0"))
      throw new SandboxPlanError(`env: "${name.replace(/\0/g, "\\0")}" is not a valid variable name`);
    if (value.includes("\0")) throw new SandboxPlanError(`env: ${name} holds a NUL byte`);
  }

  const base: Mount[] = [
    ...system.map(systemMount),
    { flags: ["--proc", "/proc"], target: "/proc", what: "/proc" },
    { flags: ["--dev", "/dev"], target: "/dev", what: "/dev" },
    { flags: ["--tmpfs", "/tmp"], target: "/tmp", what: "the private /tmp" },
  ];
  const user: Mount[] = [
    { flags: ["--tmpfs", home], target: home, what: "home" },
    { flags: ["--bind", worktree, worktree], target: worktree, what: "worktree" },
    ...gitDirs.map((dir, index) => ({ flags: ["--bind", dir, dir], target: dir, what: `gitDirs[${index}]` })),
    ...agentConfig.map((bind, index) => bindMount(bind, true, `agentConfig[${index}]`)),
    ...binds.map((bind, index) => bindMount(bind, false, `binds[${index}]`)),
    ...(masksStateRoot ? [{ flags: ["--tmpfs", stateRoot], target: stateRoot, what: "the state root's mask" }] : []),
    ...(socket === undefined ? [] : [{ flags: ["--bind", socket.source, socket.target], target: socket.target, what: "the session's socket" }]),
    ...links.map((link, index) => ({ flags: ["--symlink", link.to, link.path], target: link.path, what: `links[${index}]` })),
    ...hidden.map((path, index) => ({ flags: ["--ro-bind", "/dev/null", path], target: path, what: `hiddenFiles[${index}]` })),
  ];
  refuseDuplicates([...base, ...user]);
  for (const target of MADE_BY_THE_SANDBOX) {
    for (const mount of user) {
      if (within(mount.target, target) && mount.target !== target)
        throw new SandboxPlanError(`${mount.what}: ${mount.target} is inside ${target}, which the sandbox makes itself`);
    }
  }
  const reachable = user.map((mount) => mount.target).concat("/tmp");
  if (!reachable.some((target) => within(cwd, target))) {
    throw new SandboxPlanError(`cwd: ${cwd} is inside nothing bound into the sandbox (the worktree, a git dir, a bind, the home or /tmp)`);
  }

  // A parent is mounted before what is bound inside it, or it would cover it: shallow targets first, the request's order among equals.
  const ordered = user
    .map((mount, index) => ({ mount, index, depth: depthOf(mount.target) }))
    .sort((a, b) => a.depth - b.depth || a.index - b.index)
    .map(({ mount }) => mount);

  const argv = [request.program ?? "bwrap", "--die-with-parent", "--unshare-user"];
  if (request.denyNestedUserNamespaces ?? true) argv.push("--disable-userns");
  // As root bwrap keeps every capability in the sandbox unless told otherwise; unprivileged it has none to drop.
  argv.push("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL");
  if (!(request.terminal ?? false)) argv.push("--new-session");
  for (const mount of [...base, ...ordered]) argv.push(...mount.flags);
  argv.push(...gitProtections(worktree, gitDirs));
  if (request.env !== undefined) {
    argv.push("--clearenv");
    for (const [name, value] of Object.entries(request.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) argv.push("--setenv", name, value);
  }
  argv.push("--chdir", cwd, "--", ...request.argv);
  return argv;
}

/**
 * What git reads as instructions is bound read-only over the writable git dirs: the config (core.hooksPath,
 * core.fsmonitor, filters), the hooks, a linked worktree's pointers (`commondir`, `gitdir`) and its
 * `.git` file. Written by the agent, each would run its code outside the sandbox the next time the
 * daemon or the operator runs git there. `-try`: each is bound only where it exists.
 */
function gitProtections(worktree: string, gitDirs: readonly string[]): string[] {
  const flags: string[] = [];
  const dotGit = posix.join(worktree, ".git");
  if (!gitDirs.includes(dotGit)) flags.push("--ro-bind-try", dotGit, dotGit);
  for (const dir of gitDirs) {
    for (const name of ["config", "hooks", "commondir", "gitdir"]) {
      const path = posix.join(dir, name);
      flags.push("--ro-bind-try", path, path);
    }
  }
  return flags;
}

function systemMount(entry: SystemEntry): Mount {
  if (entry.kind === "symlink") return { flags: ["--symlink", entry.to, entry.path], target: entry.path, what: `the system's ${entry.path}` };
  return { flags: ["--ro-bind", entry.path, entry.path], target: entry.path, what: `the system's ${entry.path}` };
}

function bindMount(bind: SandboxBind, optional: boolean, what: string): Mount {
  const flag = `${bind.mode === "ro" ? "--ro-bind" : "--bind"}${optional ? "-try" : ""}`;
  return { flags: [flag, bind.source, bind.target], target: bind.target, what };
}

function refuseDuplicates(mounts: readonly Mount[]): void {
  const seen = new Map<string, string>();
  for (const mount of mounts) {
    const earlier = seen.get(mount.target);
    if (earlier !== undefined) throw new SandboxPlanError(`${mount.what}: ${mount.target} is already the target of ${earlier}`);
    seen.set(mount.target, mount.what);
  }
}

function refuseAbove(path: string, guarded: string, field: string, name: string): void {
  if (within(guarded, path)) {
    const how = path === guarded ? "is" : "contains";
    throw new SandboxPlanError(`${field}: ${path} ${how} ${name} ${guarded}, which no session may see`);
  }
}

/** `path` is `dir` or inside it. */
function within(path: string, dir: string): boolean {
  return path === dir || dir === "/" || path.startsWith(`${dir}/`);
}

function depthOf(path: string): number {
  return path === "/" ? 0 : path.split("/").length - 1;
}

/** An absolute path written as bwrap will take it: no NUL or newline, no `.`/`..`, doubled or trailing slash. */
function cleanPath(path: string, field: string): string {
  if (typeof path !== "string" || path === "") throw new SandboxPlanError(`${field}: a path is needed`);
  if (path.includes("\0")) throw new SandboxPlanError(`${field}: the path holds a NUL byte`);
  if (/[\n\r]/.test(path)) throw new SandboxPlanError(`${field}: the path holds a line break`);
  if (!posix.isAbsolute(path)) throw new SandboxPlanError(`${field}: ${path} is not an absolute path`);
  if (posix.normalize(path) !== path || (path.length > 1 && path.endsWith("/"))) {
    throw new SandboxPlanError(`${field}: ${path} is not written plainly (write ${posix.normalize(path).replace(/(.)\/$/, "$1")})`);
  }
  return path;
}

function cleanBind(bind: SandboxBind, field: string): SandboxBind {
  if (bind.mode !== "ro" && bind.mode !== "rw") throw new SandboxPlanError(`${field}: mode must be "ro" or "rw"`);
  return { source: cleanPath(bind.source, `${field}.source`), target: cleanPath(bind.target, `${field}.target`), mode: bind.mode };
}

function cleanSocket(socket: { readonly source: string; readonly target: string }): { source: string; target: string } {
  return { source: cleanPath(socket.source, "sessionSocket.source"), target: cleanPath(socket.target, "sessionSocket.target") };
}

function cleanLink(link: { readonly path: string; readonly to: string }, index: number): { path: string; to: string } {
  const path = cleanPath(link.path, `links[${index}].path`);
  if (link.to === "" || /[\0\n\r]/.test(link.to)) throw new SandboxPlanError(`links[${index}]: the link's target is empty or holds a NUL or line break`);
  return { path, to: link.to };
}

function cleanSystemEntry(entry: SystemEntry, index: number): SystemEntry {
  const path = cleanPath(entry.path, `system[${index}]`);
  if (path === "/") throw new SandboxPlanError(`system[${index}]: the whole file system is not a system path`);
  if (entry.kind !== "symlink") return { kind: entry.kind, path };
  if (entry.to === "" || /[\0\n\r]/.test(entry.to)) throw new SandboxPlanError(`system[${index}]: the link's target is empty or holds a NUL or line break`);
  return entry;
}
