import { promises as fs } from "node:fs";
import { join, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { errnoOf } from "../../errors.js";
import { CorruptFileError, isTemporaryName, readJsonFile, readJsonFileSync } from "../../state/index.js";
import { checkLocalProject } from "../../workitem/index.js";
import { CorruptTrackerFileError } from "./errors.js";
import { itemSnapshotSchema, projectMetaSchema, schemaProblem } from "./records.js";
import type { ItemSnapshot, ProjectMeta } from "./records.js";

/**
 * The files of one local project, read as they are on disk: meta.json, the item snapshots, the
 * item folder's listing. Reading only — what a snapshot lags behind the journal is applied by
 * the tracker, and every write goes through its lock.
 */

export interface ProjectFiles {
  /** The project's name (its folder's). */
  readonly project: string;
  readonly dir: string;
  readonly journal: string;
  readonly itemsDir: string;
  readonly meta: string;
  /** `file://` URL of itemsDir, the base of every item's URL. */
  readonly itemsUrl: string;
}

const ITEM_FILE = /^([1-9][0-9]{0,9})\.json$/;

export function projectFiles(trackerDir: string, project: string): ProjectFiles {
  const dir = join(trackerDir, project);
  const itemsDir = join(dir, "items");
  return {
    project,
    dir,
    journal: join(dir, "journal.jsonl"),
    itemsDir,
    meta: join(dir, "meta.json"),
    itemsUrl: pathToFileURL(itemsDir).href,
  };
}

export function itemPath(files: ProjectFiles, number: number): string {
  return `${files.itemsDir}${sep}${number}.json`;
}

export async function readMeta(files: ProjectFiles): Promise<ProjectMeta | undefined> {
  const value = await readTrackerJson(files.meta);
  if (value === undefined) return undefined;
  const result = projectMetaSchema.safeParse(value);
  if (!result.success) throw new CorruptTrackerFileError(files.meta, schemaProblem(result.error));
  return result.data;
}

export async function readSnapshot(files: ProjectFiles, number: number): Promise<ItemSnapshot | undefined> {
  return snapshotOf(files, number, await readTrackerJson(itemPath(files, number)));
}

export function readSnapshotSync(files: ProjectFiles, number: number): ItemSnapshot | undefined {
  return snapshotOf(files, number, readTrackerJsonSync(itemPath(files, number)));
}

function snapshotOf(files: ProjectFiles, number: number, value: unknown): ItemSnapshot | undefined {
  const path = itemPath(files, number);
  if (value === undefined) return undefined;
  const result = itemSnapshotSchema.safeParse(value);
  if (!result.success) throw new CorruptTrackerFileError(path, schemaProblem(result.error));
  if (result.data.number !== number) throw new CorruptTrackerFileError(path, `it holds item #${result.data.number}`);
  return result.data;
}

/** The numbers of the item snapshots on disk, in no particular order. */
export async function itemNumbers(files: ProjectFiles): Promise<number[]> {
  let names: string[];
  try {
    names = await fs.readdir(files.itemsDir);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return [];
    throw error;
  }
  const numbers: number[] = [];
  for (const name of names) {
    if (isTemporaryName(name)) continue;
    const match = ITEM_FILE.exec(name);
    if (match) numbers.push(Number(match[1]));
  }
  return numbers;
}

export async function highestItemNumber(files: ProjectFiles): Promise<number> {
  return Math.max(0, ...(await itemNumbers(files)));
}

export function isProjectName(name: string): boolean {
  try {
    return checkLocalProject(name) === name;
  } catch {
    return false;
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return false;
    throw error;
  }
}

function trackerReadError(path: string, error: unknown): unknown {
  return error instanceof CorruptFileError ? new CorruptTrackerFileError(path, "it is not valid JSON") : error;
}

async function readTrackerJson(path: string): Promise<unknown> {
  try {
    return await readJsonFile(path);
  } catch (error) {
    throw trackerReadError(path, error);
  }
}

function readTrackerJsonSync(path: string): unknown {
  try {
    return readJsonFileSync(path);
  } catch (error) {
    throw trackerReadError(path, error);
  }
}
