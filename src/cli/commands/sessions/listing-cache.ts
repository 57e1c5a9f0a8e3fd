import { folderStamp, readFolderCache, writeFolderCache } from "../../../state/folder-cache.js";

/**
 * The entries a listing of `dir` needs, kept in `cacheFile` while the folder is unchanged (the
 * stamp is taken before the read, so a write during it makes the next listing read again). A
 * listing with a problem is not kept, so a damaged record is reported every time until it is
 * repaired.
 */
export function cachedListing<T, P>(dir: string, cacheFile: string, read: () => { entries: T[]; problems: P[] }): { entries: T[]; problems: P[] } {
  const stamp = folderStamp(dir);
  const cached = stamp === undefined ? undefined : readFolderCache<T>(cacheFile, dir, stamp);
  if (cached) return { entries: cached, problems: [] };
  const { entries, problems } = read();
  if (stamp !== undefined && problems.length === 0) writeFolderCache(cacheFile, { dir, stamp, entries });
  return { entries, problems };
}
