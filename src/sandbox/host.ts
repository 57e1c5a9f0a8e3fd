import { lstatSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import type { SystemEntry } from "./plan.js";

/**
 * The host's system layout as the plan needs it: /usr and /etc read-only; /bin, /sbin and the
 * /lib folders as they are here — links on a merged-/usr system (Debian 12: /bin → usr/bin),
 * recreated as the same links so a path through them resolves as outside, folders elsewhere.
 * /etc/resolv.conf is often a link out of /etc (systemd-resolved: /run/systemd/resolve/…), and
 * the network stays open, so the file it leads to is bound too.
 */

export const SYSTEM_DIRS: readonly string[] = ["/usr", "/etc"];
export const TOP_LEVEL_ENTRIES: readonly string[] = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

export interface HostFs {
  lstat(path: string): { isSymbolicLink(): boolean; isDirectory(): boolean; isFile(): boolean } | undefined;
  readlink(path: string): string;
  realpath(path: string): string;
}

const nodeFs: HostFs = {
  lstat: (path) => lstatSync(path, { throwIfNoEntry: false }),
  readlink: (path) => readlinkSync(path),
  realpath: (path) => realpathSync(path),
};

/** This machine's system entries, in mount order. Missing entries are left out. */
export function hostSystem(fs: HostFs = nodeFs): SystemEntry[] {
  const entries: SystemEntry[] = [];
  for (const path of SYSTEM_DIRS) {
    if (fs.lstat(path) !== undefined) entries.push({ kind: "dir", path });
  }
  for (const path of TOP_LEVEL_ENTRIES) {
    const stat = fs.lstat(path);
    if (stat === undefined) continue;
    if (stat.isSymbolicLink()) entries.push({ kind: "symlink", path, to: fs.readlink(path) });
    else if (stat.isDirectory()) entries.push({ kind: "dir", path });
  }
  const resolver = resolvConfOutsideSystem(fs);
  if (resolver !== undefined) entries.push({ kind: "file", path: resolver });
  return entries;
}

function resolvConfOutsideSystem(fs: HostFs): string | undefined {
  const stat = fs.lstat("/etc/resolv.conf");
  if (stat === undefined || !stat.isSymbolicLink()) return undefined;
  let resolved: string;
  try {
    resolved = fs.realpath("/etc/resolv.conf");
  } catch {
    // A dangling link resolves nowhere outside either.
    return undefined;
  }
  return SYSTEM_DIRS.some((dir) => resolved === dir || resolved.startsWith(`${dir}/`)) ? undefined : resolved;
}

/** The files under /etc only root may read, and so a sandbox run as root would: its passwords and the host's SSH keys. */
const ROOT_ONLY_FILES = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-"];

/** Which of those exist here (hiddenFiles of the plan): the password files, and each `/etc/ssh/ssh_host_*_key`. */
export function rootOnlySecrets(
  fs: Pick<HostFs, "lstat"> & { readdir(path: string): string[] } = { ...nodeFs, readdir: (path) => readdirSync(path) },
): string[] {
  const found = ROOT_ONLY_FILES.filter((path) => fs.lstat(path)?.isFile() === true);
  let names: string[];
  try {
    names = fs.readdir("/etc/ssh");
  } catch {
    // No SSH server configured here: no host keys to hide.
    names = [];
  }
  const keys = names.filter((name) => /^ssh_host_.*_key$/.test(name)).map((name) => `/etc/ssh/${name}`);
  return [...found, ...keys.filter((path) => fs.lstat(path)?.isFile() === true)];
}
