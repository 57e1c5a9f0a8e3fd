import type { InboundEvent } from "../routing/inbound.js";
import type { LegacyLedger } from "./legacy-poll-state.js";

/**
 * What the poller reads: a source of changes, each already normalized into an InboundEvent. The
 * local tracker's feed (`local-source.ts`) and the GitHub feed (`github-feed/`) are sources; the
 * poller (`poller.ts`) reads them. Here, below all three, so none imports another for its shape.
 */

/** One new thing a source saw, already normalized. */
export interface SourceItem {
  /** Stable across reads from the same cursor: the poll state remembers settled items by it. */
  readonly id: string;
  readonly event: InboundEvent;
}

export interface SourceBatch {
  /** Oldest first. */
  readonly items: readonly SourceItem[];
  /** Where the next read starts once every item is settled. */
  readonly cursor: string;
  /** Do not read this source again before. */
  readonly notBefore?: Date;
  /** Why (`poll-interval`, `rate-limit`, `secondary-limit`); recorded with poll.rate_limited. */
  readonly notBeforeReason?: string;
  /**
   * Parts of the source that could not be read this time while the rest progressed (one
   * repository of several): reported and counted as errors, read again next cycle.
   */
  readonly errors?: readonly string[];
  /**
   * Part of the source was not read (`errors`, or a rate limit cut the read short): its changes
   * may come back from a later cursor, so what is settled of them is remembered past this batch.
   */
  readonly partial?: boolean;
}

/**
 * A change feed the poller reads. `read(undefined)` is first sight: it answers the cursor that
 * marks "now" and no items, since history is taken as read rather than replayed. A read throwing
 * an error with a `resetAt` date (a rate limit) defers the source until then.
 */
export interface PollSourceRuntime {
  /** Names the source in the poll state and in events, e.g. `local:*` or `github:octo/repo`. */
  readonly key: string;
  read(cursor: string | undefined, signal?: AbortSignal): Promise<SourceBatch>;
  /**
   * The cursor to start from when the state file is an older per-item ledger (see
   * legacy-poll-state.ts); undefined when the ledger says nothing about this source.
   */
  adoptLegacy?(ledger: LegacyLedger): string | undefined;
  /**
   * For a source that can tell when it has news (the local tracker's journals): calls `onChange`
   * soon after, and `onUnwatchable` once if that stops working. Returns how to stop.
   */
  watch?(onChange: () => void, onUnwatchable: (problem: string) => void): () => void;
}
