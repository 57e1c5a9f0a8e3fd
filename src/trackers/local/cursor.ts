import { RefError, checkLocalProject } from "../../workitem/index.js";
import { InvalidCursorError } from "./errors.js";

/**
 * The change-feed cursor: per project, the seq of the last change handed out. Opaque to callers;
 * written as `{"v":1,"projects":{"demo":12}}` so a person reading the poll state can follow it.
 */

const CURSOR_VERSION = 1;

export type CursorPositions = ReadonlyMap<string, number>;

export function encodeCursor(positions: CursorPositions): string {
  const projects: Record<string, number> = {};
  for (const project of [...positions.keys()].sort()) projects[project] = positions.get(project) ?? 0;
  return JSON.stringify({ v: CURSOR_VERSION, projects });
}

export function decodeCursor(cursor: string): Map<string, number> {
  let value: unknown;
  try {
    value = JSON.parse(cursor);
  } catch {
    throw new InvalidCursorError("not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new InvalidCursorError("not an object");
  const record = value as Record<string, unknown>;
  if (record.v !== CURSOR_VERSION) throw new InvalidCursorError(`unknown version ${JSON.stringify(record.v)}`);
  const projects = record.projects;
  if (typeof projects !== "object" || projects === null || Array.isArray(projects)) {
    throw new InvalidCursorError('"projects" is not an object');
  }
  const positions = new Map<string, number>();
  for (const [project, seq] of Object.entries(projects)) {
    try {
      if (checkLocalProject(project) !== project) throw new RefError("not lower case");
    } catch {
      throw new InvalidCursorError(`"${project}" is not a local project name`);
    }
    if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0) {
      throw new InvalidCursorError(`the position of "${project}" is not a whole number`);
    }
    positions.set(project, seq);
  }
  return positions;
}
