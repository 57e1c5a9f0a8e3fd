import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { starterConfigText } from "../../src/config/starter.js";
import { configSchema } from "../../src/config/schema.js";

describe("the notify block", () => {
  it("is empty by default: no sink, nothing sent", () => {
    expect(configSchema.parse({}).notify).toEqual({ sinks: [], retry: { initialDelaySeconds: 1, maxDelaySeconds: 60 }, queueLimit: 200 });
  });

  it("gives a sink its defaults: json, every moment, 5 tries of 10 s", () => {
    const [sink] = configSchema.parse({ notify: { sinks: [{ name: "team", urlEnv: "TEAM_URL" }] } }).notify.sinks;
    expect(sink).toEqual({
      name: "team",
      kind: "json",
      urlEnv: "TEAM_URL",
      moments: ["gate-waiting", "question", "blocked", "budget", "failed-to-start", "ci-gave-up", "done"],
      maxAttempts: 5,
      timeoutSeconds: 10,
    });
  });

  it.each([
    [{ sinks: [{ name: "team" }] }, "urlEnv"],
    [{ sinks: [{ name: "team", urlEnv: "https://hooks.slack.com/x" }] }, "an environment variable name"],
    [{ sinks: [{ name: "team", url: "https://hooks.slack.com/x", urlEnv: "A" }] }, "url"],
    [{ sinks: [{ name: "Team", urlEnv: "A" }] }, "lowercase letters"],
    [{ sinks: [{ name: "team", urlEnv: "A", kind: "teams" }] }, "kind"],
    [{ sinks: [{ name: "team", urlEnv: "A", moments: ["approved"] }] }, "moments"],
    [{ sinks: [{ name: "team", urlEnv: "A", moments: [] }] }, "moments"],
    [
      {
        sinks: [
          { name: "team", urlEnv: "A" },
          { name: "team", urlEnv: "B" },
        ],
      },
      'notify.sinks[0] already has the name "team"',
    ],
  ])("refuses %j (%s)", (notify, problem) => {
    const result = configSchema.safeParse({ notify });
    expect(result.success).toBe(false);
    expect((result.error?.issues ?? []).map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("\n")).toContain(problem);
  });

  it("the starter config's commented example is a valid block once uncommented", () => {
    const text = starterConfigText("demo");
    const start = text.indexOf("# notify:");
    const block = text
      .slice(start, text.indexOf("\n\n", start))
      .split("\n")
      .map((line) => line.replace(/^# ?/, ""))
      .join("\n");
    const notify = (parse(block) as { notify: unknown }).notify;
    expect(configSchema.parse({ notify }).notify.sinks[0]).toMatchObject({ name: "team", kind: "slack", urlEnv: "TEAM_SLACK_WEBHOOK" });
  });
});
