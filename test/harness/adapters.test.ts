import { describe, expect, it } from "vitest";
import { routingSchema } from "../../src/config/schema.js";
import {
  HarnessConfigError,
  harnessAdapter,
  isResumableSessionId,
  newHarnessSessionId,
  type HarnessLaunchInput,
} from "../../src/harness/index.js";

const input: HarnessLaunchInput = {
  sessionId: "3f2a-id",
  prompt: "Fix #7; then `rm -rf /` $(whoami) 'quoted' \"double\" $HOME",
  workItem: "local:demo#7",
};

const routing = (harnesses: Record<string, unknown> = {}) => routingSchema.parse({ harnesses });

describe("builtin harnesses", () => {
  it.each([
    {
      name: "claude defaults",
      harnesses: {},
      fresh: ["claude", "--session-id", "3f2a-id", input.prompt],
      resume: ["claude", "--resume", "3f2a-id", input.prompt],
    },
    {
      name: "claude with command and args",
      harnesses: { claude: { command: ["npx", "claude"], args: ["--model", "opus"] } },
      fresh: ["npx", "claude", "--session-id", "3f2a-id", "--model", "opus", input.prompt],
      resume: ["npx", "claude", "--resume", "3f2a-id", "--model", "opus", input.prompt],
    },
  ])("$name", ({ harnesses, fresh, resume }) => {
    const adapter = harnessAdapter("claude", routing(harnesses));
    expect(adapter.name).toBe("claude");
    expect(adapter.fresh(input)).toEqual(fresh);
    expect(adapter.resume?.(input)).toEqual(resume);
  });

  it.each([
    { name: "cursor defaults", harnesses: {}, fresh: ["cursor-agent", input.prompt] },
    {
      name: "cursor with command and args",
      harnesses: { cursor: { command: ["/opt/cursor-agent"], args: ["--force"] } },
      fresh: ["/opt/cursor-agent", "--force", input.prompt],
    },
  ])("$name cannot resume", ({ harnesses, fresh }) => {
    const adapter = harnessAdapter("cursor", routing(harnesses));
    expect(adapter.fresh(input)).toEqual(fresh);
    expect(adapter.resume).toBeUndefined();
  });
});

describe("command harnesses", () => {
  it("replaces every placeholder, inside elements too, and appends args", () => {
    const adapter = harnessAdapter(
      "aider",
      routing({
        aider: {
          command: ["aider", "--message={prompt}", "--id", "{session_id}", "{work_item}:{work_item}", "{unknown}"],
          args: ["--yes", "{prompt}"],
        },
      }),
    );
    expect(adapter.name).toBe("aider");
    expect(adapter.fresh(input)).toEqual([
      "aider",
      `--message=${input.prompt}`,
      "--id",
      "3f2a-id",
      "local:demo#7:local:demo#7",
      "{unknown}",
      "--yes",
      // args are appended as given: placeholders are a command feature
      "{prompt}",
    ]);
    expect(adapter.resume).toBeUndefined();
  });

  it("never re-scans substituted text nor interprets replacement patterns", () => {
    const adapter = harnessAdapter("mine", routing({ mine: { command: ["agent", "{prompt}", "{work_item}"] } }));
    const tricky: HarnessLaunchInput = {
      sessionId: "sid",
      prompt: "say {session_id} and {work_item} and $& and $1 and $$",
      workItem: "{prompt}",
    };
    expect(adapter.fresh(tricky)).toEqual(["agent", tricky.prompt, "{prompt}"]);
  });

  it("resumes with resumeCommand when one is declared", () => {
    const adapter = harnessAdapter(
      "mine",
      routing({ mine: { command: ["agent", "new", "{prompt}"], resumeCommand: ["agent", "continue", "{session_id}", "{prompt}"], args: ["-v"] } }),
    );
    expect(adapter.fresh(input)).toEqual(["agent", "new", input.prompt, "-v"]);
    expect(adapter.resume?.(input)).toEqual(["agent", "continue", "3f2a-id", input.prompt, "-v"]);
  });
});

describe("unknown harnesses", () => {
  it.each(["nope", "constructor", "__proto__"])("%s is a configuration error naming the known ones", (name) => {
    const config = routing({ mine: { command: ["agent"] } });
    expect(() => harnessAdapter(name, config)).toThrow(HarnessConfigError);
    expect(() => harnessAdapter(name, config)).toThrow(/known: claude, cursor, mine.*routing\.harnesses/);
  });
});

describe("session ids", () => {
  it("are fresh uuids that are resumable", () => {
    const a = newHarnessSessionId();
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(newHarnessSessionId()).not.toBe(a);
    expect(isResumableSessionId(a)).toBe(true);
  });

  it.each([
    ["abc", true],
    ["A.b_c-1", true],
    ["x".repeat(128), true],
    ["x".repeat(129), false],
    ["", false],
    ["-rf", false],
    [".hidden", false],
    ["a/b", false],
    ["a b", false],
    ["a\nb", false],
    ["id$(x)", false],
  ])("%j resumable: %s", (id, expected) => {
    expect(isResumableSessionId(id)).toBe(expected);
  });
});
