import { join } from "node:path";
import { z } from "zod";
import { messageOf } from "../errors.js";
import type { LinkSource } from "../routing/inbound.js";
import { readTextIfPresent, writeJsonAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import type { LockOptions } from "../state/lock.js";
import { formatWorkItemRef, parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import { workItemSchema } from "../registry/record-schema.js";

/**
 * Pull request → work item bindings, one JSON file per pull request (`<linksDir>/<slug>.json`).
 * A binding is what lets a PR's events reach the session of the work item it was made for even
 * when the event itself no longer names that item (a review comment carries no closing
 * reference). Reading one is a single file read, cheap enough for every event on a PR.
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

/** Held for one read-modify-write; a lock this stale belongs to a killed process (as for session records). */
const LINK_LOCK: LockOptions = { staleMs: 3_000, timeoutMs: 15_000 };

export class PullRequestLinks {
  constructor(
    readonly dir: string,
    private readonly lock: LockOptions = LINK_LOCK,
  ) {}

  /** Throws RefError for a ref that is not canonical-parseable. */
  pathFor(pullRequest: string): string {
    return join(this.dir, `${workItemSlug(parseWorkItemRef(pullRequest))}.json`);
  }

  /** The binding of one pull request; undefined when there is none or its file is damaged. */
  get(pullRequest: string): PullRequestLink | undefined {
    return this.lookup(pullRequest).link;
  }

  lookup(pullRequest: string): LinkLookup {
    let canonical: string;
    let path: string;
    let text: string | undefined;
    try {
      canonical = formatWorkItemRef(parseWorkItemRef(pullRequest));
      path = this.pathFor(canonical);
    } catch (error) {
      return { problem: `cannot look up the binding of "${pullRequest}": ${messageOf(error)}` };
    }
    try {
      text = readTextIfPresent(path);
    } catch (error) {
      return { problem: `cannot read ${path}: ${messageOf(error)}` };
    }
    if (text === undefined) return {};
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch (error) {
      return { problem: damaged(path, `not valid JSON (${messageOf(error)})`) };
    }
    const parsed = linkSchema.safeParse(value);
    if (!parsed.success) return { problem: damaged(path, "not a pull request binding") };
    if (parsed.data.pullRequest !== canonical) return { problem: damaged(path, `it binds ${parsed.data.pullRequest}, not ${canonical}`) };
    return { link: parsed.data };
  }

  /**
   * Records that `pullRequest` belongs to `workItem`. An explicit binding (a person or an agent
   * said so) replaces anything and is never replaced by an inference; a later inference replaces
   * an earlier one only when it names another item, so re-seeing the same link is not news.
   * Returns whether the file changed. A damaged file counts as no binding and is overwritten.
   */
  async bind(pullRequest: string, workItem: WorkItem, source: LinkSource, now: Date): Promise<boolean> {
    const canonical = formatWorkItemRef(parseWorkItemRef(pullRequest));
    const path = this.pathFor(canonical);
    return withLock(
      path,
      async () => {
        const current = this.get(canonical);
        if (current !== undefined) {
          const sameItem = current.workItem.ref === workItem.ref;
          if (source === "explicit" && current.source === "explicit" && sameItem) return false;
          if (source !== "explicit" && (current.source === "explicit" || sameItem)) return false;
        }
        const link: PullRequestLink = {
          pullRequest: canonical,
          workItem: { ...workItem },
          source,
          linkedAt: now.toISOString(),
        };
        await writeJsonAtomic(path, link);
        return true;
      },
      this.lock,
    );
  }
}

function damaged(path: string, reason: string): string {
  return `pull request binding ${path} is damaged: ${reason}; it is ignored until it is repaired or moved aside`;
}
