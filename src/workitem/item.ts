import { formatWorkItemRef, hostOf, repositoryOf } from "./ref.js";
import type { TrackerKind, WorkItemKind, WorkItemRef } from "./ref.js";

/** What every tracker says about a work item, whatever its origin. */
export interface WorkItem {
  /** The canonical ref, e.g. `github:octo/repo#15`. */
  readonly ref: string;
  readonly tracker: TrackerKind;
  readonly host: string;
  /** `owner/repo` on GitHub; the project name on the local tracker. */
  readonly repository: string;
  readonly number: number;
  readonly kind: WorkItemKind;
  /** Where a person can look at it. */
  readonly url: string;
  /** The tracker's own stable identifier (GitHub's node id, the local tracker's item id). */
  readonly id: string;
}

export function githubItemUrl(ref: WorkItemRef & { tracker: "github" }, kind: WorkItemKind): string {
  const section = kind === "pull_request" ? "pull" : "issues";
  return `https://${ref.host}/${ref.owner}/${ref.repo}/${section}/${ref.number}`;
}

export function workItemOf(ref: WorkItemRef, fields: { kind: WorkItemKind; url: string; id: string }): WorkItem {
  return {
    ref: formatWorkItemRef(ref),
    tracker: ref.tracker,
    host: hostOf(ref),
    repository: repositoryOf(ref),
    number: ref.number,
    kind: fields.kind,
    url: fields.url,
    id: fields.id,
  };
}
