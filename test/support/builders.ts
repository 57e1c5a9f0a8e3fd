import { DEFAULT_AUTO_EXECUTE_LABEL } from "../../src/config/schema.js";
import { tmuxTargetFor } from "../../src/registry/index.js";
import type { SessionRecord } from "../../src/registry/index.js";
import { workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";

/**
 * The values and shapes tests build again and again, built once. A test that needs a variant
 * spreads over what these return, so the shape of a record or an event lives in one place.
 */

/** The label that arms a work item (routing.autoExecuteLabel's default). */
export const ARM = DEFAULT_AUTO_EXECUTE_LABEL;

/** A live session record for `item`, as a claim leaves it; `fields` override any part. */
export function sessionRecord(item: WorkItem, fields: Partial<SessionRecord> = {}): SessionRecord {
  const slug = workItemSlug(item.ref);
  const at = fields.createdAt ?? SAMPLE_TIME;
  return {
    version: 1,
    workItem: { ...item },
    harness: "claude",
    harnessSessionId: "6f1c1c2e-4a8f-4f55-9f57-1f0e8a1b2c3d",
    cwd: `/work/${slug}`,
    status: "active",
    createdAt: at,
    lastEventAt: at,
    tmuxTarget: tmuxTargetFor(slug),
    recentDeliveries: [],
    url: item.url,
    ...fields,
  };
}

/** The time sample records are stamped with unless a test sets its own. */
export const SAMPLE_TIME = "2026-01-01T00:00:00.000Z";
