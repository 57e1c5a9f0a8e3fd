import { DEFAULT_GATE_KEYWORDS } from "../../src/config/graph-schema.js";
import { DEFAULT_AUTO_EXECUTE_LABEL, DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import type { WhySettings } from "../../src/why/index.js";
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

/** The settings `why` reads, as the starter config leaves them (alice authorized, control and graphs on, the default keywords); `fields` override any part. */
export function whySettings(fields: Partial<WhySettings> = {}): WhySettings {
  return {
    authorizedUsers: ["alice"],
    spawnOnUnmatched: "labeled",
    autoExecuteLabel: ARM,
    control: { enabled: true, requireStartCommand: true, keywords: { ...DEFAULT_CONTROL_KEYWORDS } },
    graph: { enabled: true, keywords: { ...DEFAULT_GATE_KEYWORDS } },
    ...fields,
  };
}

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
