import { z } from "zod";

/**
 * The three kinds of record the local tracker keeps per project, and how a journal line moves an
 * item snapshot forward. Everything here is data and pure functions; the files are read and
 * written by tracker.ts and journal.ts.
 *
 *   journal.jsonl    one JournalLine per change: the source of truth and the change feed
 *   items/<n>.json   ItemSnapshot: item n after the journal up to its `seq`
 *   meta.json        ProjectMeta: the last seq applied and the last item number handed out
 */

const positive = z.int().positive();
const itemState = z.enum(["open", "closed"]);

const lineBase = {
  seq: positive,
  ts: z.string().min(1),
  number: positive,
  itemId: z.string().min(1),
  actor: z.string().min(1),
  labels: z.array(z.string()),
  state: itemState,
};

export const journalLineSchema = z.discriminatedUnion("kind", [
  z.object({ ...lineBase, kind: z.literal("opened"), title: z.string(), body: z.string() }),
  z.object({ ...lineBase, kind: z.literal("commented"), comment: z.object({ id: z.string().min(1), body: z.string() }) }),
  z.object({ ...lineBase, kind: z.literal("labeled"), label: z.string() }),
  z.object({ ...lineBase, kind: z.literal("unlabeled"), label: z.string() }),
  z.object({ ...lineBase, kind: z.literal("closed") }),
  z.object({ ...lineBase, kind: z.literal("reopened") }),
  z.object({
    ...lineBase,
    kind: z.literal("checked"),
    check: z.object({
      name: z.string().min(1),
      conclusion: z.enum(["failure", "success"]),
      url: z.string().optional(),
      commit: z.string().optional(),
      log: z.string().optional(),
    }),
  }),
]);

export type JournalLine = z.infer<typeof journalLineSchema>;
export type JournalKind = JournalLine["kind"];

const storedCommentSchema = z.object({
  id: z.string().min(1),
  seq: positive,
  author: z.string().min(1),
  body: z.string(),
  createdAt: z.string().min(1),
});

export type StoredComment = z.infer<typeof storedCommentSchema>;

export const itemSnapshotSchema = z.object({
  number: positive,
  id: z.string().min(1),
  /** The seq of the last journal line applied to this item. */
  seq: positive,
  title: z.string(),
  body: z.string(),
  author: z.string().min(1),
  state: itemState,
  labels: z.array(z.string()),
  createdAt: z.string().min(1),
  updatedAt: z.string().min(1),
  closedAt: z.string().min(1).nullable(),
  comments: z.array(storedCommentSchema),
});

export type ItemSnapshot = z.infer<typeof itemSnapshotSchema>;

export const projectMetaSchema = z.object({
  lastSeq: z.int().nonnegative(),
  lastNumber: z.int().nonnegative(),
  /**
   * Written only by a repair that moved the journal's last lines aside: every seq up to here was
   * handed out, so the journal may end below `lastSeq` and the next change is numbered above it.
   * Gone with the next change.
   */
  seqFloor: z.int().nonnegative().optional(),
});

export type ProjectMeta = z.infer<typeof projectMetaSchema>;

/** Why a value does not fit its schema, in one line naming the first offending key. */
export function schemaProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected content";
  const path = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${path}${issue.message}`;
}

/** A journal line that cannot follow the snapshot it is applied to. */
export class JournalMismatchError extends Error {
  override readonly name: string = "JournalMismatchError";
}

/** Item `number` after `line`. Pure: the same inputs always give the same snapshot. */
export function applyLine(snapshot: ItemSnapshot | undefined, line: JournalLine): ItemSnapshot {
  if (line.kind === "opened") {
    if (snapshot) throw new JournalMismatchError(`change ${line.seq} opens item ${line.number}, which already exists`);
    return {
      number: line.number,
      id: line.itemId,
      seq: line.seq,
      title: line.title,
      body: line.body,
      author: line.actor,
      state: line.state,
      labels: [...line.labels],
      createdAt: line.ts,
      updatedAt: line.ts,
      closedAt: line.state === "closed" ? line.ts : null,
      comments: [],
    };
  }
  if (!snapshot) throw new JournalMismatchError(`change ${line.seq} concerns item ${line.number}, which does not exist`);
  if (snapshot.number !== line.number || snapshot.id !== line.itemId) {
    throw new JournalMismatchError(`change ${line.seq} concerns another item than ${snapshot.number}`);
  }
  const next: ItemSnapshot = {
    ...snapshot,
    seq: line.seq,
    state: line.state,
    labels: [...line.labels],
    updatedAt: line.ts,
  };
  switch (line.kind) {
    case "commented":
      return {
        ...next,
        comments: [...snapshot.comments, { id: line.comment.id, seq: line.seq, author: line.actor, body: line.comment.body, createdAt: line.ts }],
      };
    case "closed":
      return { ...next, closedAt: line.ts };
    case "reopened":
      return { ...next, closedAt: null };
    case "labeled":
    case "unlabeled":
    case "checked":
      return next;
  }
}
