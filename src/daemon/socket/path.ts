import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { EXIT_FAILURE, ExitError } from "../../errors.js";
import { ensurePrivateFolder, folderFacts, folderProblem, lstatIfPresent, ownUid } from "../../state/index.js";

/**
 * Where the daemon of a state root listens, computed the same way by the daemon (before it
 * listens) and by every client (before it connects): `<state root>/daemon.sock`, or — when that
 * path is too long for a socket address — `$XDG_RUNTIME_DIR/the-loop/<hash of the root>.sock`.
 * Never a shared temporary folder: a folder another local user can make first is one they can
 * put their own socket in. Each folder is checked with `lstat` before it is trusted — a real
 * folder, owned by this user, with no permission for anyone else (the state root may keep read
 * and search bits an older version gave it, until the daemon tightens it) — else the answer is a
 * refusal that says how to fix it.
 */

/** unix(7): sun_path holds 108 bytes with its NUL; leave room. */
export const MAX_SOCKET_PATH = 100;

export interface SocketPathOptions {
  /** Default $XDG_RUNTIME_DIR. */
  readonly runtimeDir?: string | undefined;
  /** Default this process's effective uid. */
  readonly uid?: number | undefined;
}

function refuse(message: string): never {
  throw new ExitError(message, EXIT_FAILURE, "config");
}

export function daemonSocketPath(stateRoot: string, options: SocketPathOptions = { runtimeDir: process.env.XDG_RUNTIME_DIR }): string {
  const uid = "uid" in options ? options.uid : ownUid();
  const inRoot = join(stateRoot, "daemon.sock");
  const fits = Buffer.byteLength(inRoot) <= MAX_SOCKET_PATH;
  const fix =
    `set state.root to a shorter path${fits ? "" : ` (the socket there would be ${Buffer.byteLength(inRoot)} bytes long; at most ${MAX_SOCKET_PATH} fit)`}, ` +
    "or set XDG_RUNTIME_DIR to a folder only you can use (mode 0700)";
  if (fits) {
    // A root that is not there yet has no daemon: connecting says so.
    const root = lstatIfPresent(stateRoot);
    // Group and other may still read and search a root an older version made; never write to it.
    const problem = root === undefined ? undefined : folderProblem(folderFacts(root), uid, 0o055);
    if (problem !== undefined)
      refuse(
        `the state root ${stateRoot} ${problem}, so its daemon socket cannot be trusted; make it yours and private (\`chmod 700\`), or set state.root to a folder that is`,
      );
    return inRoot;
  }
  const runtimeDir = options.runtimeDir;
  if (runtimeDir === undefined || runtimeDir === "") {
    refuse(`the state root's path is too long for the daemon's socket, and XDG_RUNTIME_DIR is unset: ${fix}`);
  }
  const hash = createHash("sha256").update(stateRoot).digest("hex").slice(0, 24);
  const dir = join(runtimeDir, "the-loop");
  const path = join(dir, `${hash}.sock`);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) refuse(`the daemon's socket ${path} is too long for a socket address: ${fix}`);
  const base = lstatIfPresent(runtimeDir);
  const baseProblem = base === undefined ? "does not exist" : folderProblem(folderFacts(base), uid);
  if (baseProblem !== undefined) refuse(`XDG_RUNTIME_DIR ${runtimeDir} ${baseProblem}, so the daemon's socket cannot go there: ${fix}`);
  const problem = ensurePrivateFolder(dir, uid);
  if (problem !== undefined) refuse(`the daemon's socket folder ${dir} ${problem}; remove it (it is not the-loop's), or ${fix}`);
  return path;
}

/**
 * Where the daemon listens for one work item's session: `sockets/<hash of the root and the ref>/sock` beside
 * the daemon's own socket, so the folder checks that guard the daemon's socket guard these too. A
 * folder per session, because a sandbox binds the folder, not the socket: a socket the daemon
 * makes again after a restart is a new file, which a bind of the old one would never show.
 * Undefined when that path is too long for a socket address (a session then reaches the daemon
 * through the daemon's socket, with its credential) or when the daemon's socket has no place.
 */
export function sessionSocketPath(stateRoot: string, workItem: string, options?: SocketPathOptions): string | undefined {
  let daemonSocket: string;
  try {
    daemonSocket = daemonSocketPath(stateRoot, options);
  } catch {
    // The daemon's own socket has no trusted place: neither has a session's, and the daemon says so at start.
    return undefined;
  }
  // The state root is hashed in too: two projects whose sockets share $XDG_RUNTIME_DIR never meet.
  const hash = createHash("sha256").update(`${stateRoot}\0${workItem}`).digest("hex").slice(0, 16);
  const path = join(dirname(daemonSocket), "sockets", hash, "sock");
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? path : undefined;
}
