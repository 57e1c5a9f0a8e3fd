import { readFile } from "node:fs/promises";
import type { PaneExit } from "./runner.js";

/**
 * The exit of a process that has ended but not been reaped yet, read from the kernel
 * (`/proc/<pid>/stat`, Linux). tmux marks a pane dead when its terminal closes and learns the
 * exit status only when it reaps the pane's process; on a loaded machine that can lag by more than
 * a second, while the zombie already holds the status. Anything but a zombie whose parent is
 * `parentPid` (the tmux server) yields nothing, so a reused pid is never mistaken for the pane's.
 */
export async function zombieExit(pid: number, parentPid: number, procRoot = "/proc"): Promise<PaneExit | undefined> {
  let text: string;
  try {
    text = await readFile(`${procRoot}/${pid}/stat`, "utf8");
  } catch {
    // Reaped in the meantime, or no /proc here: tmux's own answer is the one left.
    return undefined;
  }
  return zombieExitOf(text, parentPid);
}

/** `zombieExit` over the text of a stat file; see proc(5) for its fields. */
export function zombieExitOf(stat: string, parentPid: number): PaneExit | undefined {
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  const close = stat.lastIndexOf(")");
  if (close < 0) return undefined;
  const fields = stat
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // fields[0] is field 3 (state), fields[1] field 4 (ppid), fields[49] field 52 (exit_code).
  const [state, ppid] = fields;
  const code = fields[49];
  if (state !== "Z" || ppid !== String(parentPid) || code === undefined || !/^\d+$/.test(code)) return undefined;
  const waitStatus = Number(code);
  // The exit code field is in waitpid(2)'s form: the signal in the low 7 bits, else the status above them.
  const signal = waitStatus & 0x7f;
  return signal === 0 ? { status: (waitStatus >> 8) & 0xff } : { signal };
}
