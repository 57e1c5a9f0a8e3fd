export {
  CorruptFileError,
  createFileExclusive,
  fsyncDirectory,
  isTemporaryName,
  readJsonFile,
  readJsonFileSync,
  toJsonText,
  writeFileAtomic,
  writeJsonAtomic,
} from "./atomic.js";
export type { WriteOptions } from "./atomic.js";
export { LockCompromisedError, LockTimeoutError, withLock } from "./lock.js";
export type { LockOptions } from "./lock.js";
export { deriveStatePaths, resolveConfiguredPath } from "./layout.js";
export type { StatePaths } from "./layout.js";
