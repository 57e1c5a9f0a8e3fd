import { describe, expect, it } from "vitest";
import { routingSchema } from "../../src/config/schema.js";
import { HarnessConfigError, harnessAdapter, isResumableSessionId, newHarnessSessionId, type HarnessLaunchInput } from "../../src/harness/index.js";

const input: HarnessLaunchInput = {
  sessionId: "3f2a-id",
  prompt: "Fix #7; then `rm -rf /` $(whoami) 'quoted' \"double\" $HOME",
  workItem: "local:demo#7",
};

const routing = (harnesses: Record<string, unknown> = {}, mcp: Record<string, unknown> = { enabled: false }) => routingSchema.parse({ harnesses, mcp });

describe("builtin harnesses", () => {
  it.each([
    {
      name: "claude defaults",
      harnesses: {},
      fresh: ["claude", "--session-id", "3f2a-id", "--", input.prompt],
      resume: ["claude", "--resume", "3f2a-id", "--", input.prompt],
    },
    {
      name: "claude with command and args",
      harnesses: { claude: { command: ["npx", "claude"], args: ["--model", "opus"] } },
      fresh: ["npx", "claude", "--session-id", "3f2a-id", "--model", "opus", "--", input.prompt],
      resume: ["npx", "claude", "--resume", "3f2a-id", "--model", "opus", "--", input.prompt],
    },
  ])("$name", ({ harnesses, fresh, resume }) => {
    const adapter = harnessAdapter("claude", routing(harnesses));
    expect(adapter.name).toBe("claude");
    expect(adapter.fresh(input)).toEqual(fresh);
    expect(adapter.resume?.(input)).toEqual(resume);
  });

  it("registers the-loop's MCP server with claude and pre-approves its four tools and nothing else, before the operator's args", () => {
    const adapter = harnessAdapter("claude", routing({ claude: { args: ["--allowedTools", "Edit"] } }, {}));
    const argv = adapter.fresh(input);
    expect(argv.slice(0, 3)).toEqual(["claude", "--session-id", "3f2a-id"]);
    expect(argv.slice(-4)).toEqual(["--allowedTools", "Edit", "--", input.prompt]);
    const config = JSON.parse(argv[argv.indexOf("--mcp-config") + 1] ?? "") as unknown;
    expect(config).toEqual({ mcpServers: { "the-loop": { type: "stdio", command: "the-loop", args: ["mcp"] } } });
    expect(argv[argv.indexOf("--allowedTools") + 1]).toBe("mcp__the-loop__ask,mcp__the-loop__graph_complete,mcp__the-loop__graph_status,mcp__the-loop__why");
    expect(argv.indexOf("--mcp-config")).toBeLessThan(argv.indexOf("--"));
    expect(adapter.resume?.(input)).toEqual(["claude", "--resume", "3f2a-id", ...argv.slice(3)]);
    // routing.mcp.enabled: false leaves the argv as the operator wrote it.
    expect(harnessAdapter("claude", routing({}, { enabled: false })).fresh(input)).toEqual(["claude", "--session-id", "3f2a-id", "--", input.prompt]);
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

describe("where the prompt travels", () => {
  it.each([
    { name: "claude", harnesses: {}, fresh: true, resume: true },
    { name: "cursor", harnesses: {}, fresh: true, resume: true },
    { name: "mine", harnesses: { mine: { command: ["agent", "--task={prompt}"] } }, fresh: true, resume: false },
    { name: "mine", harnesses: { mine: { command: ["agent", "--interactive"] } }, fresh: false, resume: false },
    {
      name: "mine",
      harnesses: { mine: { command: ["agent", "new"], resumeCommand: ["agent", "continue", "{session_id}", "{prompt}"] } },
      fresh: false,
      resume: true,
    },
  ])("$name $harnesses.mine.command: in the argv on a fresh start $fresh, on a resume $resume", ({ name, harnesses, fresh, resume }) => {
    expect(harnessAdapter(name, routing(harnesses)).promptInArgv).toEqual({ fresh, resume });
  });

  it("a claude prompt that looks like an option stays the prompt, after --, whatever variadic option args end on", () => {
    const adapter = harnessAdapter("claude", routing({ claude: { args: ["--allowedTools", "Bash(the-loop ask:*)"] } }));
    const argv = adapter.fresh({ ...input, prompt: "--- front matter\n-p" });
    expect(argv.slice(-4)).toEqual(["--allowedTools", "Bash(the-loop ask:*)", "--", "--- front matter\n-p"]);
  });
});

describe("a hostile prompt", () => {
  it.each(["claude", "cursor", "mine"])("%s gets it with no control character left, in the argv and on a resume", (name) => {
    const adapter = harnessAdapter(name, routing({ mine: { command: ["agent", "{prompt}"], resumeCommand: ["agent", "-r", "{prompt}"] } }));
    const hostile = { ...input, prompt: "Title\x1b]52;c;ZWNobyBoaQ==\x07 \x00\x1b[201~\r!touch x\r" };
    const launches = [adapter.fresh(hostile), ...(adapter.resume ? [adapter.resume(hostile)] : [])];
    expect(launches).toHaveLength(name === "cursor" ? 1 : 2);
    for (const argv of launches) {
      const prompt = argv.find((element) => element.startsWith("Title")) ?? "";
      expect(prompt).toContain("Title");
      // eslint-disable-next-line no-control-regex -- the point is that none is left
      expect(prompt).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    }
  });
});

describe("readiness", () => {
  it("claude knows its own screen; a configured readyPattern replaces it", () => {
    expect(harnessAdapter("claude", routing()).readyPattern?.test("  ? for shortcuts")).toBe(true);
    expect(harnessAdapter("claude", routing()).blockedPattern?.test("Enter to confirm · Esc to cancel")).toBe(true);
    expect(harnessAdapter("claude", routing({ claude: { readyPattern: "^> $" } })).readyPattern?.source).toBe("^> $");
  });

  it("cursor and command harnesses have none unless configured", () => {
    expect(harnessAdapter("cursor", routing()).readyPattern).toBeUndefined();
    expect(harnessAdapter("mine", routing({ mine: { command: ["agent"] } })).readyPattern).toBeUndefined();
    expect(harnessAdapter("mine", routing({ mine: { command: ["agent"], readyPattern: "ready>" } })).readyPattern?.test("ready>")).toBe(true);
  });

  it("a readyPattern that is no regular expression is a config error", () => {
    expect(() => routing({ mine: { command: ["agent"], readyPattern: "(" } })).toThrow(/not a valid regular expression/);
  });
});

describe("unknown harnesses", () => {
  it.each(["nope", "constructor", "__proto__"])("%s is a configuration error naming the known ones", (name) => {
    const config = routing({ mine: { command: ["agent"] } });
    expect(() => harnessAdapter(name, config)).toThrow(HarnessConfigError);
    expect(() => harnessAdapter(name, config)).toThrow(/known: claude, cursor, (.+, )?mine.*routing\.harnesses/);
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
