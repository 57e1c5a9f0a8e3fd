import { readFileSync } from "node:fs";
import { errnoOf } from "../errors.js";

/**
 * Whether a process recorded in the state root (a pidfile's holder, a session record's claimer)
 * still runs. A pid alone can be reused by an unrelated process; on Linux its start time
 * (`startTicks`, field 22 of /proc/<pid>/stat, clock ticks since boot) tells a reused pid apart.
 */

interface ProcStat {
  readonly state: string;
  readonly startTicks: number;
}

function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // Field 2 is the command name in parentheses and may itself hold spaces and parentheses, so
  // the fields are counted from the last ")": what follows starts at field 3.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const startTicks = Number(fields[22 - 3]);
  if (state === undefined || !Number.isSafeInteger(startTicks)) return undefined;
  return { state, startTicks };
}

/** The start time of `pid` in clock ticks since boot, where /proc tells it. */
export function processStartTicks(pid: number): number | undefined {
  return readProcStat(pid)?.startTicks;
}

/**
 * Whether `pid` names a running process — and, when `startTicks` is given and /proc can tell,
 * the same process that recorded it. Unknown counts as alive: wrongly refusing a start is
 * recoverable, two daemons on one state root are not.
 */
export function isProcessAlive(pid: number, startTicks?: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    if (errnoOf(error) !== "EPERM") return false;
  }
  const stat = readProcStat(pid);
  if (stat === undefined) return true;
  // A zombie has exited; only its parent has not collected it yet.
  if (stat.state === "Z" || stat.state === "X") return false;
  return startTicks === undefined || stat.startTicks === startTicks;
}
