import { z } from "zod";
import { messageOf } from "../errors.js";
import { RECORD_LOCK } from "../state/record-store.js";
import { DamagedRecordError } from "../state/record-kind.js";
import { FILE_BACKEND } from "../state/backend.js";
import type { LocatedRecordStore, RecordBackend } from "../state/backend.js";
import type { RecordKind, RecordTransaction } from "../state/record-kind.js";
import type { LockOptions } from "../state/lock.js";
import { formatWorkItemRef, parseWorkItemRef } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import { workItemSchema } from "./record-schema.js";

/**
 * How a work item other than the event's own entity came to be named by it: a pull request's
 * closing reference (`Fixes #12`), its head branch (`issue-12`, existence-checked before use),
 * or an explicit binding (`the-loop sessions link-pr`), which wins over both inferences.
 */
export type LinkSource = "closing-reference" | "branch" | "explicit";

/**
 * Pull request → work item bindings, one JSON file per pull request (`<linksDir>/<slug>.json`).
 * A binding is what lets a PR's events reach the session of the work item it was made for even
 * when the event itself no longer names that item (a review comment carries no closing
 * reference). Reading one is a single file read, cheap enough for every event on a PR. They are
 * a record kind of the one record store, so a write is atomic and locked like every record's.
 */

export interface PullRequestLink {
  readonly pullRequest: string;
  /** The whole entity, so routing can name it without asking the tracker. */
  readonly workItem: WorkItem;
  readonly source: LinkSource;
  readonly linkedAt: string;
}

/** What a lookup found: a damaged file is described, never thrown, so routing goes on without it. */
export interface LinkLookup {
  readonly link?: PullRequestLink;
  readonly problem?: string;
}

const linkSchema = z.object({
  pullRequest: z.string().min(1),
  workItem: workItemSchema,
  source: z.enum(["explicit", "closing-reference", "branch"]),
  linkedAt: z.string(),
});

/** A pull request binding as a record kind of the one record store (state/record-store.ts), keyed by its pull request. */
const linkKind: RecordKind<typeof linkSchema> = {
  name: "pull request binding",
  itemField: "pullRequest",
  schema: linkSchema,
  order: (a, b) => (a.pullRequest < b.pullRequest ? -1 : a.pullRequest > b.pullRequest ? 1 : 0),
  remedy: "it is ignored until it is repaired or moved aside",
  misaddressed: (named, item) => `refusing to write the binding of ${named} in the transaction of ${item} (bindings carry the canonical ref)`,
};

export class PullRequestLinks {
  /** The bindings themselves, for what copies a state whole (`state migrate`). */
  readonly records: LocatedRecordStore<PullRequestLink>;

  /** `backend`: where the bindings are (files in `dir` when omitted; state/backend.ts). */
  constructor(
    readonly dir: string,
    lock: LockOptions = RECORD_LOCK,
    backend: RecordBackend = FILE_BACKEND,
  ) {
    this.records = backend.records(linkKind, { key: "pr-links", file: { dir, lock } });
  }

  /** Throws RefError for a ref that is not canonical-parseable. */
  pathFor(pullRequest: string): string {
    return this.records.locate(pullRequest);
  }

  /** The binding of one pull request; undefined when there is none or its file is damaged. */
  get(pullRequest: string): PullRequestLink | undefined {
    return this.lookup(pullRequest).link;
  }

  lookup(pullRequest: string): LinkLookup {
    try {
      formatWorkItemRef(parseWorkItemRef(pullRequest));
    } catch (error) {
      return { problem: `cannot look up the binding of "${pullRequest}": ${messageOf(error)}` };
    }
    try {
      const link = this.records.readSync(pullRequest);
      return link === undefined ? {} : { link };
    } catch (error) {
      if (error instanceof DamagedRecordError) return { problem: damaged(error.where, error.reason) };
      return { problem: messageOf(error) };
    }
  }

  /**
   * Records that `pullRequest` belongs to `workItem`. An explicit binding (a person or an agent
   * said so) replaces anything and is never replaced by an inference; a later inference replaces
   * an earlier one only when it names another item, so re-seeing the same link is not news.
   * Returns whether the file changed. A damaged file counts as no binding and is overwritten.
   */
  async bind(pullRequest: string, workItem: WorkItem, source: LinkSource, now: Date): Promise<boolean> {
    const canonical = formatWorkItemRef(parseWorkItemRef(pullRequest));
    return this.records.transaction(canonical, async (tx) => {
      const current = currentLink(tx);
      if (current !== undefined) {
        const sameItem = current.workItem.ref === workItem.ref;
        if (source === "explicit" && current.source === "explicit" && sameItem) return false;
        if (source !== "explicit" && (current.source === "explicit" || sameItem)) return false;
      }
      await tx.write({ pullRequest: canonical, workItem: { ...workItem }, source, linkedAt: now.toISOString() });
      return true;
    });
  }
}

/** The binding under the transaction's lock; a damaged one counts as none (and is overwritten). */
function currentLink(tx: RecordTransaction<PullRequestLink>): PullRequestLink | undefined {
  try {
    return tx.read();
  } catch (error) {
    if (error instanceof DamagedRecordError) return undefined;
    throw error;
  }
}

function damaged(path: string, reason: string): string {
  return `pull request binding ${path} is damaged: ${reason}; it is ignored until it is repaired or moved aside`;
}
