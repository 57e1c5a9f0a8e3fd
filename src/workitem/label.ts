/**
 * How the-loop compares labels, in one place: trimmed and case-insensitively. GitHub treats label
 * names case-insensitively (`Bug` and `bug` are one label), and a label written in the config
 * with a stray space still means the label. The router, the trackers and the GitHub change feed
 * all compare through these, so "does this item carry the arming label" has one answer.
 */

/** A label as compared: trimmed, lower case. */
export function normalizeLabel(label: string): string {
  return label.trim().toLowerCase();
}

/** Whether `label` is `wanted`. A `wanted` that is empty (or only spaces) matches nothing. */
export function labelMatches(label: string, wanted: string): boolean {
  const key = normalizeLabel(wanted);
  return key !== "" && normalizeLabel(label) === key;
}

/** Whether `labels` carry `wanted`. */
export function hasLabel(labels: readonly string[], wanted: string): boolean {
  const key = normalizeLabel(wanted);
  return key !== "" && labels.some((label) => normalizeLabel(label) === key);
}
