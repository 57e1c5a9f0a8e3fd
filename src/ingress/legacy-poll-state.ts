import { z } from "zod";
import type { EventSink } from "../events/index.js";
import { RefError, parseWorkItemRef } from "../workitem/index.js";
import type { WorkItemRef } from "../workitem/index.js";

/**
 * Poll state from before the state root existed: the file sat at `<project>/.the-loop/poll-state.json`
 * and, in older versions still, held a per-item ledger instead of per-source cursors. An upgrade
 * must neither replay that history nor lose what happened since the old poller last looked, so
 * the old file stays in use until the operator moves it, and an old ledger is adopted as a
 * starting point rather than refused.
 */

export { resolvePollStateFile, type ResolvedPollStateFile } from "../state/poll-state-file.js";

// A daemon composes its poller once, but tests and the bench build many in one process: the
// operator hears about a given file once.
const warned = new Set<string>();

/** Records poll.legacy_state and tells the operator, once per process for each legacy file. */
export function warnLegacyPollState(options: { legacyFile: string; newFile: string; events: EventSink; warn?: ((message: string) => void) | undefined }): void {
  if (warned.has(options.legacyFile)) return;
  warned.add(options.legacyFile);
  options.events.emit("poll.legacy_state", { legacy_file: options.legacyFile, new_file: options.newFile });
  options.warn?.(
    `the poll state is read from ${options.legacyFile}, where it lived before state.root; ` +
      `stop the daemon and move it to ${options.newFile}, which is used from then on`,
  );
}

/** One work item of an older ledger. */
export interface LegacyLedgerItem {
  readonly ref: WorkItemRef;
  /** Ids of the comments the old poller had forwarded (GitHub node ids). */
  readonly seenComments: readonly string[];
  readonly lastPolledAt: Date;
}

/** The older per-item ledger: `{"items": {"github:owner/repo#N": {"seenComments", "lastPolledAt"}}}`. */
export interface LegacyLedger {
  readonly items: readonly LegacyLedgerItem[];
}

const ledgerItemSchema = z.looseObject({
  seenComments: z.array(z.union([z.string(), z.number()])).default([]),
  lastPolledAt: z.string().refine((text) => !Number.isNaN(Date.parse(text)), "not a date"),
});

const ledgerSchema = z.strictObject({ items: z.record(z.string(), ledgerItemSchema) });

export type LedgerParse = { readonly ledger: LegacyLedger } | { readonly problem: string };

/**
 * The ledger in `value`, a problem when it is shaped like one but is not, or undefined when it is
 * not ledger-shaped at all.
 */
export function parseLegacyLedger(value: unknown): LedgerParse | undefined {
  if (typeof value !== "object" || value === null || !("items" in value) || "version" in value || "sources" in value) return undefined;
  const result = ledgerSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue && issue.path.length > 0 ? `at ${issue.path.map(String).join(".")}: ` : "";
    return { problem: `an older per-item ledger, but ${where}${issue?.message ?? "unexpected content"}` };
  }
  const items: LegacyLedgerItem[] = [];
  for (const [key, item] of Object.entries(result.data.items)) {
    let ref: WorkItemRef;
    try {
      ref = parseWorkItemRef(key);
    } catch (error) {
      if (error instanceof RefError) return { problem: `an older per-item ledger, but ${error.message}` };
      throw error;
    }
    items.push({ ref, seenComments: item.seenComments.map(String), lastPolledAt: new Date(item.lastPolledAt) });
  }
  return { ledger: { items } };
}
