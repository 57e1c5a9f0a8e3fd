import type { LoopPoint } from "../sdk/hooks/loop-catalog.js";
import type { HookContext } from "./types.js";
import { kindInWords, ofSpec } from "./kinds.js";
import { describe, sameJson } from "./values.js";

/**
 * Reading one executor's answer at a `loop.*` event. Unlike a lifecycle point, nothing here
 * replaces a decision for the next executor: a `.pre` answer denies or passes, an observe-only
 * answer carries labels to record, and the run itself is never changed by a hook's words.
 */

export interface LoopAnswer {
  /** At a `.pre` event, when the answer denies: its deny_reason ("" without one). */
  readonly denial?: { readonly reason: string };
  /** At an observe-only event, the labels it answered (absent: none, or an empty object). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Keys that were not read: a changed fact, an unknown key, a decision the event does not take. */
  readonly ignored: readonly string[];
}

/**
 * What `answer` (a plain object) says at `point`, or why it is the executor's failure: a decision
 * of the wrong kind (`denied: "yes"`, `labels: {n: 1}`) fails the whole answer, so a malformed
 * answer never denies. A key set to undefined is an absent key, as it would be once serialized.
 */
export function readLoopAnswer(point: LoopPoint, payload: HookContext, answer: Readonly<Record<string, unknown>>): LoopAnswer | string {
  const read = new Map<string, unknown>();
  const ignored: string[] = [];
  for (const key of Object.keys(answer)) {
    // Each key read once: a getter must not answer one value when checked and another when applied.
    const raw = answer[key];
    if (raw === undefined) continue;
    const spec = Object.hasOwn(point.decisions, key) ? point.decisions[key] : undefined;
    if (spec === undefined) {
      // An echoed fact is no change; anything else — a fact changed, a key the event lacks — is dropped.
      if (!Object.hasOwn(point.facts, key) || !sameJson(raw, payload[key])) ignored.push(key);
      continue;
    }
    const checked = ofSpec(raw, spec);
    if (checked === undefined) return `decision "${key}" must be ${kindInWords(spec)}, not ${describe(raw)}`;
    read.set(key, checked.value);
  }

  if (point.canDeny) {
    const denies = read.get("denied") === true || read.get("deny") === true;
    if (!denies) {
      // A reason without a denial decides nothing: recorded as dropped unless it only echoes the payload's.
      const reason = read.get("deny_reason");
      if (reason !== undefined && !sameJson(reason, payload["deny_reason"])) ignored.push("deny_reason");
      return { ignored };
    }
    const reason = read.get("deny_reason");
    return { denial: { reason: typeof reason === "string" ? reason : "" }, ignored };
  }
  const labels = read.get("labels");
  return isTextRecord(labels) && Object.keys(labels).length > 0 ? { labels, ignored } : { ignored };
}

/** Labels as the decision's spec reads them (checked by ofSpec above): names to text. */
function isTextRecord(value: unknown): value is Record<string, string> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((entry) => typeof entry === "string");
}
