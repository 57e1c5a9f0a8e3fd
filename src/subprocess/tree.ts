import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";

/**
 * Everything a command started, found so it can be stopped with the command — including what left
 * the command's process group (`setsid`, a daemon's double fork) and what lost its parent and was
 * re-parented to init. Node cannot make the daemon a child subreaper or put a command in a cgroup
 * of its own, so on Linux the-loop follows the processes through `/proc`:
 *
 * - **the tree**: every process whose parent is the command or a process already found, by the
 *   parent ids in `/proc/<pid>/stat`, read when the command starts, at growing intervals while it
 *   runs (from 20 ms up to 500 ms), when it is stopped and when it ends;
 * - **the run's mark**: every command gets `THE_LOOP_RUN_ID=<random id>` in its environment, which
 *   what it starts inherits; when the command is stopped or ends, every process of this user
 *   started since the command did that carries the mark is found too, wherever it was re-parented.
 *
 * A process is remembered with its start time and signalled only while `/proc` still shows that
 * start time, so a recycled pid is never hit. What escapes both — a process that clears its
 * environment and leaves its parent between two reads — is the limit of what an unprivileged
 * process can see. Elsewhere (macOS) there is no `/proc`: only the process group is signalled.
 */

/** The environment variable that marks a run's processes; it is no secret (it authenticates nothing). */
export const RUN_ID_ENV = "THE_LOOP_RUN_ID";

/** A fresh run id for RUN_ID_ENV. */
export function newRunId(): string {
  return randomBytes(12).toString("hex");
}

interface ProcStat {
  readonly ppid: number;
  /** Field 22, the start time in clock ticks since boot (compared as a number, kept as written). */
  readonly start: string;
}

const PROC = "/proc";

/** The processes of one running command: its root and everything found to descend from it. */
export class ProcessTree {
  /** pid → start time, of each process found (the root included). */
  private readonly known = new Map<number, string>();
  private readonly rootStart: number;
  private readonly mark: string;

  constructor(
    private readonly root: number,
    runId: string,
  ) {
    const stat = statOf(root);
    this.rootStart = stat === undefined ? 0 : Number(stat.start);
    if (stat !== undefined) this.known.set(root, stat.start);
    this.mark = `${RUN_ID_ENV}=${runId}`;
  }

  /**
   * Reads `/proc` once, adding what now descends from a process already found; with `marked`, also
   * what carries the run's mark (one read of `environ` for each process started since the root).
   */
  scan(marked: boolean): void {
    const table = processTable();
    if (table === undefined) return;
    // Parents first is not guaranteed (pids wrap), so repeat until nothing new descends.
    for (let grew = true; grew;) {
      grew = false;
      for (const [pid, stat] of table) {
        if (this.known.has(pid) || !this.known.has(stat.ppid)) continue;
        if (this.known.get(stat.ppid) !== table.get(stat.ppid)?.start) continue; // the parent's pid was recycled
        this.known.set(pid, stat.start);
        grew = true;
      }
    }
    if (!marked) return;
    for (const [pid, stat] of table) {
      if (this.known.has(pid) || pid === process.pid || Number(stat.start) < this.rootStart) continue;
      if (carriesMark(pid, this.mark)) this.known.set(pid, stat.start);
    }
  }

  /** Sends `signal` to every process found that still runs as itself, the root excepted (its group is signalled by the caller). */
  signal(signal: NodeJS.Signals): void {
    for (const [pid, start] of this.known) {
      if (pid === this.root || pid === process.pid || pid <= 1) continue;
      if (statOf(pid)?.start !== start) {
        this.known.delete(pid); // gone, or its pid is another process's now
        continue;
      }
      try {
        process.kill(pid, signal);
      } catch {
        // Exited between the read and the signal.
      }
    }
  }
}

/** Every process's parent and start time, or undefined without a `/proc` (not Linux). */
function processTable(): Map<number, ProcStat> | undefined {
  let entries: string[];
  try {
    entries = readdirSync(PROC);
  } catch {
    return undefined;
  }
  const table = new Map<number, ProcStat>();
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 0x30 || code > 0x39) continue;
    const pid = Number(entry);
    const stat = statOf(pid);
    if (stat !== undefined) table.set(pid, stat);
  }
  return table;
}

function statOf(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`${PROC}/${pid}/stat`, "latin1");
  } catch {
    return undefined; // gone, or no /proc
  }
  // Field 2 (the command name) may hold spaces and parentheses: fields are counted from the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const ppid = Number(fields[1]);
  const start = fields[19];
  if (state === "Z" || state === "X" || start === undefined || !Number.isInteger(ppid)) return undefined;
  return { ppid, start };
}

function carriesMark(pid: number, mark: string): boolean {
  let environ: string;
  try {
    environ = readFileSync(`${PROC}/${pid}/environ`, "latin1");
  } catch {
    return false; // gone, or another user's
  }
  return environ.startsWith(`${mark}\0`) || environ.includes(`\0${mark}\0`) || environ === mark || environ.endsWith(`\0${mark}`);
}
