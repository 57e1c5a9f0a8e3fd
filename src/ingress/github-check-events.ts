import { isFailingConclusion, isFailingStatus } from "../routing/feedback.js";
import { boundExcerpt } from "../routing/inbound.js";
import type { InboundCheck, InboundEvent } from "../routing/inbound.js";
import { githubItemUrl, workItemOf } from "../workitem/index.js";
import { configuredHost, githubRef, nowIso, objectOf, objectOrUndefined, optionalString, repositoryOf, unsupportedAction } from "./github-fields.js";
import type { GitHubEventContext, Json, NormalizeResult, Repository } from "./github-fields.js";
import { isGitHubWebUrl } from "./github-payloads.js";

/**
 * CI events as GitHub sends them (`check_run`, `check_suite`, `status`), for the CI feedback of a
 * session's pull requests (docs/github.md#ci-failures). Only a failure becomes an event.
 */

/**
 * A check run that completed with a failure. The event names the pull requests the payload lists
 * (a fork's pull request is not among them: the dispatcher finds it by the head commit), has no
 * actor (a status, not a request) and no body; the log is read at delivery, and only when allowed.
 */
export function checkRunEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  if (action !== "completed") return unsupportedAction(action);
  const run = objectOf(root.check_run, "check_run");
  const conclusion = optionalString(run.conclusion, "check_run.conclusion");
  if (!isFailingConclusion(conclusion)) return { ignored: `not-failing:${conclusion ?? "none"}` };
  const repository = repositoryOf(root, context);
  const app = objectOrUndefined(run.app);
  const jobId = optionalString(app?.slug, "check_run.app.slug") === "github-actions" ? (run.id as number) : undefined;
  const suite = objectOrUndefined(run.check_suite);
  const check: InboundCheck = {
    source: "check_run",
    name: String(run.name),
    conclusion: conclusion ?? "failure",
    ...urlField(optionalString(run.html_url, "check_run.html_url")),
    headSha: String(run.head_sha).toLowerCase(),
    repository: repository.fullName,
    ...(jobId !== undefined ? { jobId } : {}),
    ...(typeof suite?.id === "number" ? { suiteId: suite.id } : {}),
    pullNumbers: pullNumbersOf(run.pull_requests, root.repository),
  };
  return checkEvent(context, "check_run.completed", repository, check);
}

/**
 * A check suite that completed with a failure: which of its runs failed is read when it is
 * delivered (the suite's check runs), so a failure arriving both as a run and in its suite is one.
 */
export function checkSuiteEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  if (action !== "completed") return unsupportedAction(action);
  const suite = objectOf(root.check_suite, "check_suite");
  const conclusion = optionalString(suite.conclusion, "check_suite.conclusion");
  if (!isFailingConclusion(conclusion)) return { ignored: `not-failing:${conclusion ?? "none"}` };
  const repository = repositoryOf(root, context);
  const app = objectOrUndefined(suite.app);
  const check: InboundCheck = {
    source: "check_suite",
    name: optionalString(app?.name, "check_suite.app.name") ?? optionalString(app?.slug, "check_suite.app.slug") ?? "check suite",
    conclusion: conclusion ?? "failure",
    headSha: String(suite.head_sha).toLowerCase(),
    repository: repository.fullName,
    suiteId: suite.id as number,
    pullNumbers: pullNumbersOf(suite.pull_requests, root.repository),
  };
  return checkEvent(context, "check_suite.completed", repository, check);
}

/** A commit status that failed (`failure` or `error`); it names no pull request, so the head commit finds it. */
export function statusEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  if (!isFailingStatus(action)) return unsupportedAction(action);
  const repository = repositoryOf(root, context);
  const host = configuredHost(context);
  const target = optionalString(root.target_url, "target_url");
  // A status's target is wherever its CI lives; only a GitHub page on the configured host reaches a prompt.
  const commitUrl = optionalString(objectOrUndefined(root.commit)?.html_url, "commit.html_url");
  const url = target !== undefined && isGitHubWebUrl(target, host) ? target : commitUrl;
  const check: InboundCheck = {
    source: "status",
    name: String(root.context),
    conclusion: action,
    ...urlField(url),
    headSha: String(root.sha).toLowerCase(),
    repository: repository.fullName,
    pullNumbers: [],
  };
  return checkEvent(context, `status.${action}`, repository, check);
}

function checkEvent(context: GitHubEventContext, trackerEvent: string, repository: Repository, check: InboundCheck): NormalizeResult {
  const workItems = (check.pullNumbers ?? []).map((number) => {
    const ref = githubRef(repository, number);
    return workItemOf(ref, { kind: "pull_request", url: githubItemUrl(ref, "pull_request"), id: "" });
  });
  const first = workItems[0];
  const event: InboundEvent = {
    source: context.source,
    deliveryId: context.deliveryId,
    kind: "check_failed",
    trackerEvent,
    workItems,
    actor: null,
    body: null,
    labels: [],
    itemState: "open",
    ...(first !== undefined ? { pullRequest: { ref: first.ref } } : {}),
    check,
    occurredAt: nowIso(),
    excerpt: boundExcerpt({ check: check.name, conclusion: check.conclusion, commit: check.headSha, url: check.url }),
  };
  return { event };
}

function urlField(url: string | undefined): { url?: string } {
  return url === undefined ? {} : { url };
}

/** The numbers of the pull requests a check lists whose base is this repository (a fork's run may list the upstream's). */
function pullNumbersOf(value: unknown, repositoryJson: unknown): number[] {
  if (!Array.isArray(value)) return [];
  const repositoryId = objectOrUndefined(repositoryJson)?.id;
  const numbers: number[] = [];
  for (const entry of value) {
    const pull = objectOrUndefined(entry);
    const number = pull?.number;
    if (typeof number !== "number") continue;
    const baseId = objectOrUndefined(objectOrUndefined(pull?.base)?.repo)?.id;
    if (typeof baseId === "number" && typeof repositoryId === "number" && baseId !== repositoryId) continue;
    if (!numbers.includes(number)) numbers.push(number);
  }
  return numbers;
}
