import { z } from "zod";
import { createHash } from "node:crypto";
import { lstatSync, readFileSync, readdirSync, readlinkSync, realpathSync, unlinkSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { errnoOf } from "../errors.js";

/**
 * The half of a service lock the operating system keeps. While a daemon holds the lock it listens
 * on a local socket named after the pidfile, and the kernel frees the name the moment the process
 * ends, SIGKILL included: nothing on disk has to stay intact for the lock to hold, and nothing has
 * to go stale for it to be free. A listener refusing the name, or taking a connection, means the
 * lock is held; a connection is answered with the holder's pidfile record as one JSON line, so
 * the pid is known even when the pidfile has been damaged.
 *
 * The name is `the-loop-<hash of the pidfile's real path>`: on Linux in the abstract namespace
 * (no file to leave behind, no 108-byte path limit), on Windows a named pipe, elsewhere a socket
 * file in the user's temporary folder (a killed holder leaves that file; it is recognised by the
 * refused connection and replaced).
 *
 * An abstract name has no permissions: any local account may take it first. An answer is
 * therefore believed only when /proc shows the pid it names holding the listening socket (where
 * /proc cannot tell, it is believed); a listener that does not answer, or whose answer is not
 * believed, still holds the lock, but names no one.
 */

export interface LockSocket {
  /** What listen and connect take. */
  readonly address: string;
  /** How a person spells it: `@the-loop-…` (abstract), a pipe name or a file path. */
  readonly shown: string;
  readonly kind: "abstract" | "pipe" | "file";
  /** The bare name, for grepping a socket listing. */
  readonly name: string;
}

/** How long a listener may take to answer before it counts as one that does not. */
const ANSWER_TIMEOUT_MS = 2_000;
/** An answer is one short JSON line; anything longer is not one. */
const MAX_ANSWER_BYTES = 4_096;

/** The pidfile's path with its folder's symlinks resolved, so every spelling of it names one lock. */
function canonicalPath(pidfile: string): string {
  const absolute = resolve(pidfile);
  try {
    return join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    // No folder yet: nobody holds a lock in it either.
    return absolute;
  }
}

export function lockSocketFor(pidfile: string, platform: NodeJS.Platform = process.platform): LockSocket {
  const name = `the-loop-${createHash("sha256").update(canonicalPath(pidfile)).digest("hex").slice(0, 32)}`;
  if (platform === "linux") return { address: `\0${name}`, shown: `@${name}`, kind: "abstract", name };
  if (platform === "win32") {
    const pipe = `\\\\.\\pipe\\${name}`;
    return { address: pipe, shown: pipe, kind: "pipe", name };
  }
  const file = join(tmpdir(), `${name}.sock`);
  return { address: file, shown: file, kind: "file", name };
}

/** A command that shows who listens on the socket, for a message about a holder that names no one. */
export function howToFindHolder(socket: LockSocket): string {
  if (socket.kind === "abstract") return `\`ss -xlp | grep ${socket.name}\``;
  if (socket.kind === "file") return `\`lsof ${socket.address}\``;
  return `Process Explorer (search for the handle ${socket.name})`;
}

export type SocketAnswer =
  | { readonly state: "free" }
  /** `answer` is what the holder said (parsed JSON), when it said something believable. */
  | { readonly state: "held"; readonly answer?: unknown };

function parseAnswer(text: string): unknown {
  const line = text.split("\n", 1)[0] ?? "";
  try {
    const answer: unknown = JSON.parse(line);
    return answer;
  } catch {
    return undefined;
  }
}

/** Connects and reads the holder's answer: free when nobody listens. */
function connectAndRead(socket: LockSocket, timeoutMs: number): Promise<SocketAnswer> {
  return new Promise((settle) => {
    let text = "";
    let connected = false;
    let done = false;
    const connection: Socket = createConnection(socket.address);
    const finish = (answer: SocketAnswer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      connection.destroy();
      settle(answer);
    };
    const heard = (): SocketAnswer => ({ state: "held", answer: parseAnswer(text) });
    // A listener that took the connection and says nothing (its process hangs) still holds the name.
    const timer = setTimeout(() => finish({ state: "held" }), timeoutMs);
    connection.setEncoding("utf8");
    connection.on("connect", () => (connected = true));
    connection.on("data", (chunk: string) => {
      text += chunk;
      if (text.includes("\n") || text.length > MAX_ANSWER_BYTES) finish(heard());
    });
    connection.on("end", () => finish(heard()));
    connection.on("close", () => finish(heard()));
    connection.on("error", (error) => {
      const code = errnoOf(error);
      // Nobody listens (a socket file left by a killed holder refuses); anything else is someone there.
      if (!connected && (code === "ENOENT" || code === "ECONNREFUSED")) finish({ state: "free" });
      else finish(connected ? heard() : { state: "held" });
    });
  });
}

/** Asks whoever listens on the socket who they are; the answer is dropped when it is not believed. */
export async function askLockSocket(socket: LockSocket, timeoutMs = ANSWER_TIMEOUT_MS): Promise<SocketAnswer> {
  const reply = await connectAndRead(socket, timeoutMs);
  if (reply.state === "free" || reply.answer === undefined) return reply;
  return believable(socket, reply.answer) ? reply : { state: "held" };
}

/** What of a holder's answer is read: its pid; other keys are ignored. */
const answerPidSchema = z.object({ pid: z.int().positive() });

function pidIn(answer: unknown): number | undefined {
  const parsed = answerPidSchema.safeParse(answer);
  return parsed.success ? parsed.data.pid : undefined;
}

/** False only when the system shows the answer to be someone else's. */
function believable(socket: LockSocket, answer: unknown): boolean {
  if (socket.kind === "file") return ownedByThisUser(socket.address);
  if (socket.kind === "pipe") return true;
  const pid = pidIn(answer);
  if (pid === undefined) return false;
  const inode = listeningInode(socket.name);
  return inode === undefined || holdsInode(pid, inode);
}

/** The inode of the listening socket named `name`, from /proc/net/unix (undefined where it cannot tell). */
function listeningInode(name: string): string | undefined {
  let table: string;
  try {
    table = readFileSync("/proc/net/unix", "utf8");
  } catch {
    return undefined;
  }
  for (const line of table.split("\n")) {
    // Num RefCount Protocol Flags Type St Inode Path. Node binds an abstract name padded with NULs
    // to the full address length, which the table shows as trailing "@".
    const [, , , flags, , , inode, path] = line.trim().split(/\s+/);
    // __SO_ACCEPTCON: the listening socket itself, not a connection accepted on it.
    const listening = (Number.parseInt(flags ?? "0", 16) & 0x10000) !== 0;
    if (listening && path?.replace(/@+$/, "") === `@${name}`) return inode;
  }
  return undefined;
}

function holdsInode(pid: number, inode: string): boolean {
  const wanted = `socket:[${inode}]`;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    // Gone, or another user's: either way not the holder it claims to be.
    return false;
  }
  return fds.some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === wanted;
    } catch {
      return false;
    }
  });
}

function ownedByThisUser(path: string): boolean {
  const uid = process.getuid?.();
  if (uid === undefined) return true;
  try {
    return lstatSync(path).uid === uid;
  } catch {
    return false;
  }
}

export interface ListeningLockSocket {
  /** Stops listening: from here on the lock is free. Safe to call more than once. */
  close(): void;
}

export type TakeOutcome =
  | { readonly state: "taken"; readonly listening: ListeningLockSocket }
  | { readonly state: "held"; readonly answer?: unknown }
  /** Listening failed for another reason (a folder without access, a sandbox without sockets). */
  | { readonly state: "unavailable"; readonly reason: string };

function listen(socket: LockSocket, answer: () => string): Promise<ListeningLockSocket | "in-use"> {
  const connections = new Set<Socket>();
  const server = createServer((connection) => {
    connections.add(connection);
    connection.on("close", () => connections.delete(connection));
    // A reader that went away mid-answer is no concern of the holder's.
    connection.on("error", () => undefined);
    connection.end(`${answer()}\n`);
  });
  return new Promise((settle, reject) => {
    server.once("error", (error) => (errnoOf(error) === "EADDRINUSE" ? settle("in-use") : reject(error)));
    server.listen(socket.address, () => {
      // A failed accept (out of descriptors) must not end the daemon; the name stays held regardless.
      server.on("error", () => undefined);
      // The lock never keeps a process alive by itself.
      server.unref();
      let closed = false;
      settle({
        close() {
          if (closed) return;
          closed = true;
          server.close();
          for (const connection of connections) connection.destroy();
        },
      });
    });
  });
}

/**
 * Listens on the socket, answering every connection with `answer()`. A name in use is asked who
 * holds it; a socket file nobody listens on is the leftover of a killed holder and is replaced.
 * Callers serialise takers of one lock (the pidfile's guard), so a leftover is replaced once.
 */
export async function takeLockSocket(socket: LockSocket, answer: () => string): Promise<TakeOutcome> {
  for (let attempt = 0; ; attempt++) {
    let listening: ListeningLockSocket | "in-use";
    try {
      listening = await listen(socket, answer);
    } catch (error) {
      return { state: "unavailable", reason: error instanceof Error ? error.message : String(error) };
    }
    if (listening !== "in-use") return { state: "taken", listening };
    const reply = await askLockSocket(socket);
    if (reply.state === "held") return reply;
    // In use, yet nobody answered: a holder that ended in between, or a leftover socket file.
    if (attempt >= 2) return { state: "held" };
    if (socket.kind === "file" && !removeLeftover(socket.address)) return { state: "held" };
  }
}

/** Removes a socket file nobody listens on, if it is this user's. */
function removeLeftover(path: string): boolean {
  if (!ownedByThisUser(path)) return false;
  try {
    if (!lstatSync(path).isSocket()) return false;
    unlinkSync(path);
    return true;
  } catch (error) {
    return errnoOf(error) === "ENOENT";
  }
}
