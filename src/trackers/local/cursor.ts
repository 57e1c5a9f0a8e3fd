import { z } from "zod";
import { RefError, checkLocalProject } from "../../workitem/index.js";
import { InvalidCursorError } from "./errors.js";

/**
 * The change-feed cursor: per project, the seq of the last change handed out. Opaque to callers;
 * written as `{"v":1,"projects":{"demo":12}}` so a person reading the poll state can follow it.
 */

const CURSOR_VERSION = 1;

/** The cursor as written; other keys are ignored. Each project's name and position are checked one by one below. */
const cursorSchema = z.object({ v: z.unknown().optional(), projects: z.unknown().optional() });
const projectsSchema = z.record(z.string(), z.unknown());
const positionSchema = z.int().nonnegative();

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
  const envelope = cursorSchema.safeParse(value);
  if (!envelope.success) throw new InvalidCursorError("not an object");
  if (envelope.data.v !== CURSOR_VERSION) throw new InvalidCursorError(`unknown version ${JSON.stringify(envelope.data.v)}`);
  const listed = projectsSchema.safeParse(envelope.data.projects);
  if (!listed.success) throw new InvalidCursorError('"projects" is not an object');
  const projects = listed.data;
  const positions = new Map<string, number>();
  for (const [project, seq] of Object.entries(projects)) {
    try {
      if (checkLocalProject(project) !== project) throw new RefError("not lower case");
    } catch {
      throw new InvalidCursorError(`"${project}" is not a local project name`);
    }
    const position = positionSchema.safeParse(seq);
    if (!position.success) throw new InvalidCursorError(`the position of "${project}" is not a whole number`);
    positions.set(project, position.data);
  }
  return positions;
}

/**
 * The seq a project's feed reads on after, from the cursor's position for it. A position past the
 * journal's end was read from a journal since started afresh (its folder wiped, its rows deleted),
 * so all of it is new — unless a repair moved the journal's last lines aside and every seq up to
 * `seqFloor` stays handed out: a position up to there is where the feed left off.
 */
export function feedPosition(position: number, journalEnd: number, seqFloor: number): number {
  return position > journalEnd && position > seqFloor ? 0 : position;
}
