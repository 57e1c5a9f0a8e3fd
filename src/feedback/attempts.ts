import { z } from "zod";
import { FILE_BACKEND, RECORD_LOCK } from "../state/index.js";
import type { LocatedRecordStore, LockOptions, RecordBackend, RecordKind } from "../state/index.js";

/**
 * How many CI failures each pull request's session was told of, and which (by ciFailureKey), so
 * that a failure seen again — the webhook and the poller, a redelivery, a restart — is told once,
 * and that after `maxCiFixAttempts` a person is asked instead (once). One JSON file per pull
 * request in `<state.root>/sessions/ci/`, a record kind of the one record store: each change is
 * read and written under the pull request's lock, and every write is atomic.
 */

/** The keys a record remembers, newest last: far more than maxCiFixAttempts allows. */
export const CI_DELIVERED_MAX = 200;

const ciRecordSchema = z.object({
  pullRequest: z.string().min(1),
  attempts: z.number().int().min(0),
  delivered: z.array(z.string()).max(CI_DELIVERED_MAX),
  gaveUpAt: z.string().optional(),
});

export type CiRecord = z.infer<typeof ciRecordSchema>;

const ciKind: RecordKind<typeof ciRecordSchema> = {
  name: "CI feedback record",
  itemField: "pullRequest",
  schema: ciRecordSchema,
  order: (a, b) => (a.pullRequest < b.pullRequest ? -1 : a.pullRequest > b.pullRequest ? 1 : 0),
  remedy: "delete it to let the pull request's CI failures be counted afresh",
  misaddressed: (named, item) => `refusing to write the CI record of ${named} in the transaction of ${item}`,
};

/** What to do with a failure: tell the session, ask a person (the first failure past the limit), or nothing. */
export type CiStep = "deliver" | "give-up" | "duplicate" | "given-up";

/** Pure: the step for failure `key` on a pull request with `record`, under `maxAttempts`. */
export function ciStep(record: CiRecord | undefined, key: string, maxAttempts: number): CiStep {
  if (record?.delivered.includes(key)) return "duplicate";
  if (record?.gaveUpAt !== undefined) return "given-up";
  return (record?.attempts ?? 0) < maxAttempts ? "deliver" : "give-up";
}

export class CiAttemptStore {
  /** The records themselves, for what copies a state whole (`state migrate`). */
  readonly records: LocatedRecordStore<CiRecord>;

  /** `backend`: where the records are (files in `dir` when omitted; state/backend.ts). */
  constructor(
    readonly dir: string,
    lock: LockOptions = RECORD_LOCK,
    backend: RecordBackend = FILE_BACKEND,
  ) {
    this.records = backend.records(ciKind, { key: "ci-attempts", file: { dir, lock } });
  }

  get(pullRequest: string): CiRecord | undefined {
    return this.records.readSync(pullRequest);
  }

  /**
   * Decides and records in one step, under the pull request's lock: `deliver` counts the failure
   * before it is pasted (a paste that then fails is handed back, and its key let go by `forget`),
   * `give-up` marks the record so that a person is asked once.
   */
  async claim(pullRequest: string, key: string, maxAttempts: number, now: Date): Promise<{ step: CiStep; attempts: number }> {
    return this.records.transaction(pullRequest, async (tx) => {
      const record = tx.read();
      const step = ciStep(record, key, maxAttempts);
      const attempts = record?.attempts ?? 0;
      if (step === "deliver") {
        const delivered = [...(record?.delivered ?? []), key].slice(-CI_DELIVERED_MAX);
        await tx.write({ pullRequest, attempts: attempts + 1, delivered, ...(record?.gaveUpAt !== undefined ? { gaveUpAt: record.gaveUpAt } : {}) });
        return { step, attempts: attempts + 1 };
      }
      if (step === "give-up") await tx.write({ pullRequest, attempts, delivered: [...(record?.delivered ?? [])], gaveUpAt: now.toISOString() });
      return { step, attempts };
    });
  }

  /** Takes back a claimed delivery whose paste did not happen, so its retry is delivered. */
  async forget(pullRequest: string, key: string): Promise<void> {
    await this.records.transaction(pullRequest, async (tx) => {
      const record = tx.read();
      if (record === undefined || !record.delivered.includes(key)) return;
      await tx.write({ ...record, attempts: Math.max(0, record.attempts - 1), delivered: record.delivered.filter((id) => id !== key) });
    });
  }
}
