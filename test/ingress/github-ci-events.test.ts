import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { inboundFromGitHub } from "../../src/ingress/github-events.js";

/**
 * CI events as GitHub sends them (test/ingress/fixtures/github-ci-examples.json, from
 * @octokit/webhooks-examples): a failing check run, suite or status becomes a `check_failed`
 * event with no actor and no body; anything else is ignored.
 */

interface Example {
  readonly event: string;
  readonly payload: Record<string, unknown>;
}

const EXAMPLES = (JSON.parse(readFileSync(new URL("./fixtures/github-ci-examples.json", import.meta.url), "utf8")) as { examples: Example[] }).examples;
const context = { deliveryId: "d-1", source: "gh-webhook" as const };

function example(event: string, pick: (payload: Record<string, unknown>) => boolean): Record<string, unknown> {
  const found = EXAMPLES.find((entry) => entry.event === event && pick(entry.payload));
  if (found === undefined) throw new Error(`no ${event} example`);
  return structuredClone(found.payload);
}

const inner = (payload: Record<string, unknown>, key: string): Record<string, unknown> => payload[key] as Record<string, unknown>;

describe("CI events from GitHub's example payloads", () => {
  it("a failed check run of GitHub Actions names its pull request, its job and its commit", () => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    const result = inboundFromGitHub("check_run", payload, context);
    if (!("event" in result)) throw new Error(JSON.stringify(result));
    const { event } = result;
    expect(event.kind).toBe("check_failed");
    expect(event.actor).toBeNull();
    expect(event.body).toBeNull();
    expect(event.workItems.map((item) => item.ref)).toEqual(["github:codertocat/hello-world#2"]);
    expect(event.workItems[0]?.kind).toBe("pull_request");
    expect(event.pullRequest?.ref).toBe("github:codertocat/hello-world#2");
    expect(event.check).toMatchObject({
      source: "check_run",
      name: "Octocoders-linter",
      conclusion: "failure",
      url: "https://github.com/Codertocat/Hello-World/runs/128620228",
      headSha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
      repository: "Codertocat/Hello-World",
      jobId: 128620228,
      suiteId: 118578147,
      pullNumbers: [2],
    });
  });

  it("every successful check run and suite, and every successful status, is ignored", () => {
    for (const { event, payload } of EXAMPLES) {
      const conclusion = event === "status" ? payload.state : inner(payload, event).conclusion;
      if (conclusion === "failure") continue;
      const result = inboundFromGitHub(event, payload, context);
      expect(result, `${event} ${String(conclusion)}`).toHaveProperty("ignored");
    }
  });

  it.each(["cancelled", "action_required", "neutral", "skipped", "stale", null])("a check run concluding %s is no failure", (conclusion) => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    inner(payload, "check_run").conclusion = conclusion;
    expect(inboundFromGitHub("check_run", payload, context)).toHaveProperty("ignored");
  });

  it.each(["timed_out", "startup_failure"])("a check run concluding %s is a failure", (conclusion) => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    inner(payload, "check_run").conclusion = conclusion;
    const result = inboundFromGitHub("check_run", payload, context);
    expect("event" in result && result.event.check?.conclusion).toBe(conclusion);
  });

  it("a fork's pull request is not in the list, so the event names no work item: the head commit finds it", () => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    inner(payload, "check_run").pull_requests = [];
    const result = inboundFromGitHub("check_run", payload, context);
    if (!("event" in result)) throw new Error(JSON.stringify(result));
    expect(result.event.workItems).toEqual([]);
    expect(result.event.pullRequest).toBeUndefined();
    expect(result.event.check?.headSha).toBe("ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  });

  it("a check run that is not GitHub Actions' has no job whose log could be read", () => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    inner(inner(payload, "check_run"), "app").slug = "octocoders-linter";
    const result = inboundFromGitHub("check_run", payload, context);
    expect("event" in result && result.event.check?.jobId).toBeUndefined();
  });

  it("a pull request listed whose base is another repository is left out", () => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    const pulls = inner(payload, "check_run").pull_requests as Record<string, unknown>[];
    (inner(inner(pulls[0] as Record<string, unknown>, "base"), "repo") as Record<string, unknown>).id = 1;
    const result = inboundFromGitHub("check_run", payload, context);
    expect("event" in result && result.event.workItems).toEqual([]);
  });

  it("a check run's URL off the GitHub host is refused, as every html_url is", () => {
    const payload = example("check_run", (p) => inner(p, "check_run").conclusion === "failure");
    inner(payload, "check_run").html_url = "javascript:alert(1)";
    expect(inboundFromGitHub("check_run", payload, context)).toHaveProperty("rejected");
  });

  it("a failed check suite carries its id, for its failing runs to be read", () => {
    const payload = example("check_suite", () => true);
    inner(payload, "check_suite").conclusion = "failure";
    const result = inboundFromGitHub("check_suite", payload, context);
    if (!("event" in result)) throw new Error(JSON.stringify(result));
    const suite = inner(payload, "check_suite");
    expect(result.event.kind).toBe("check_failed");
    expect(result.event.check).toMatchObject({ source: "check_suite", suiteId: suite.id, headSha: String(suite.head_sha) });
  });

  it.each(["failure", "error"])("a commit status in state %s is a failure, named by its context, with no pull request", (state) => {
    const payload = example("status", () => true);
    payload.state = state;
    payload.target_url = "https://ci.example.com/build/1";
    const result = inboundFromGitHub("status", payload, context);
    if (!("event" in result)) throw new Error(JSON.stringify(result));
    expect(result.event.workItems).toEqual([]);
    expect(result.event.check).toMatchObject({ source: "status", name: payload.context, conclusion: state, headSha: payload.sha });
    // A target off GitHub does not reach a prompt; the commit's page (which lists its statuses) does.
    expect(result.event.check?.url).toBe((payload.commit as Record<string, unknown>).html_url);
  });

  it("a status with a malformed commit is refused", () => {
    const payload = example("status", () => true);
    payload.state = "failure";
    payload.sha = "not a sha";
    expect(inboundFromGitHub("status", payload, context)).toHaveProperty("rejected");
  });
});
