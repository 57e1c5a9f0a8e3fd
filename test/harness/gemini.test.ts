import { describe, expect, it } from "vitest";
import { routingSchema } from "../../src/config/schema.js";
import { GEMINI_BLOCKED_PATTERN, GEMINI_PASTED_PATTERN, GEMINI_READY_PATTERN } from "../../src/harness/gemini.js";
import { harnessAdapter, submitState, type HarnessLaunchInput } from "../../src/harness/index.js";
import { pasteOptionsOf } from "../../src/sessions/pane.js";
import { judgeScreen, screenTail } from "../../src/sessions/readiness.js";

const input: HarnessLaunchInput = {
  sessionId: "0b6f9a52-2c1e-4d43-9a57-5f7c3b9e2d10",
  prompt: "-p --model x; `rm -rf /` $(whoami)",
  workItem: "local:demo#7",
};

const routing = (harnesses: Record<string, unknown> = {}) => routingSchema.parse({ harnesses });

describe("the gemini adapter's argv", () => {
  it.each([
    {
      name: "defaults",
      harnesses: {},
      fresh: ["gemini", `--session-id=${input.sessionId}`, "--approval-mode=yolo", `--prompt-interactive=${input.prompt}`],
      resume: ["gemini", `--resume=${input.sessionId}`, "--approval-mode=yolo", `--prompt-interactive=${input.prompt}`],
    },
    {
      name: "a command and extra args",
      harnesses: { gemini: { command: ["npx", "gemini"], args: ["--model", "gemini-pro"] } },
      fresh: ["npx", "gemini", `--session-id=${input.sessionId}`, "--approval-mode=yolo", "--model", "gemini-pro", `--prompt-interactive=${input.prompt}`],
      resume: ["npx", "gemini", `--resume=${input.sessionId}`, "--approval-mode=yolo", "--model", "gemini-pro", `--prompt-interactive=${input.prompt}`],
    },
    {
      name: "the operator's approval mode in place of the default",
      harnesses: { gemini: { args: ["--approval-mode", "default"] } },
      fresh: ["gemini", `--session-id=${input.sessionId}`, "--approval-mode", "default", `--prompt-interactive=${input.prompt}`],
      resume: ["gemini", `--resume=${input.sessionId}`, "--approval-mode", "default", `--prompt-interactive=${input.prompt}`],
    },
    {
      name: "the operator's --yolo, which Gemini refuses beside --approval-mode",
      harnesses: { gemini: { args: ["--yolo"] } },
      fresh: ["gemini", `--session-id=${input.sessionId}`, "--yolo", `--prompt-interactive=${input.prompt}`],
      resume: ["gemini", `--resume=${input.sessionId}`, "--yolo", `--prompt-interactive=${input.prompt}`],
    },
  ])("$name", ({ harnesses, fresh, resume }) => {
    const adapter = harnessAdapter("gemini", routing(harnesses));
    expect(adapter.name).toBe("gemini");
    expect(adapter.promptInArgv).toEqual({ fresh: true, resume: true });
    expect(adapter.fresh(input)).toEqual(fresh);
    expect(adapter.resume?.(input)).toEqual(resume);
  });

  it("keeps the prompt in the option's own element, so nothing in it is read as an option", () => {
    const argv = harnessAdapter("gemini", routing()).fresh({ ...input, prompt: "--resume latest\n--yolo" });
    expect(argv.at(-1)).toBe("--prompt-interactive=--resume latest\n--yolo");
    expect(argv.filter((arg) => arg.includes("--resume"))).toHaveLength(1);
  });

  it("cleans the prompt of control sequences, as a paste", () => {
    const argv = harnessAdapter("gemini", routing()).fresh({ ...input, prompt: "title\u001b[31m red\u0000" });
    expect(argv.at(-1)).not.toContain("\u0000");
    expect(argv.at(-1)).not.toContain("\u001b");
  });

  it("is a built-in: it needs no command in the config", () => {
    expect(() => routingSchema.parse({ defaultHarness: "gemini" })).not.toThrow();
    expect(harnessAdapter("gemini", routing()).submitUntilTaken).toBe(true);
  });
});

// The bottoms of Gemini CLI 0.61.0's screens in a 220-column tmux pane, as captured, less the padding.
const RULE = "─".repeat(120);
const SCREENS = {
  idleYolo: [
    "                 ? for shortcuts",
    RULE,
    " YOLO Ctrl+Y",
    " *   Type your message or @path/to/file",
    " workspace (/directory)    sandbox    /model",
    " /tmp/work    no sandbox    Auto",
  ],
  idleDefault: [
    RULE,
    " Shift+Tab to accept edits",
    " >   Type your message or @path/to/file",
    " workspace (/directory)    sandbox    /model",
    " /tmp/work    no sandbox    Auto",
  ],
  thinking: [
    " ⠋ Thinking... (esc to cancel, 0s)      ? for shortcuts",
    RULE,
    " YOLO Ctrl+Y",
    " *   Type your message or @path/to/file",
    " workspace (/directory)    sandbox    /model",
    " /tmp/work    no sandbox    Auto",
  ],
  pasted: [
    RULE,
    " YOLO Ctrl+Y",
    " * Comment from alice:",
    '   Use -rf "quoted" $(x) ok',
    " workspace (/directory)    sandbox    /model",
    " /tmp/work    no sandbox    Auto",
  ],
  pastedLarge: [RULE, " YOLO Ctrl+Y", " * [Pasted Text: 7 lines]", " workspace (/directory)    sandbox    /model", " /tmp/work    no sandbox    Auto"],
  trust: [
    " │ Do you trust the files in this folder?     │",
    " │                                            │",
    " │ ● 1. Trust folder (work-f30Qvv)            │",
    " │   2. Trust parent folder (gem)             │",
    " │   3. Don't trust                           │",
    " │                                            │",
    " ╰────────────────────────────────────────────╯",
  ],
  auth: [
    '│   Existing API key detected (GEMINI_API_KEY). Select "Gemini API Key" option to use it.   │',
    "│                                                                        │",
    "│   (Use Enter to select)                                                │",
    "│                                                                        │",
    "│   Terms of Services and Privacy Notice for Gemini CLI                  │",
    "│                                                                        │",
    "│   https://geminicli.com/docs/resources/tos-privacy/                    │",
    "│                                                                        │",
    "╰────────────────────────────────────────────────────────────────────────╯",
  ],
  apiKey: [
    "│ │ Paste your API key here                                             │ │",
    "│ ╰─────────────────────────────────────────────────────────────────────╯ │",
    "│                                                                         │",
    "│ (Press Enter to submit, Esc to cancel, Ctrl+C to clear stored key)      │",
    "│                                                                         │",
    "╰─────────────────────────────────────────────────────────────────────────╯",
  ],
  // Resuming a conversation: the box is gone until it is done, then back with what it held.
  resuming: [
    " ⠋ Resuming session...",
    "  Queued (press ↑ to edit):",
    "    the-loop started you again on local:demo#1: your harness was killed by signal 15",
    RULE,
    " YOLO Ctrl+Y                                   1 MCP server",
    " workspace (/directory)    sandbox    /model",
    " [INSERT]  /tmp/work    no sandbox    Auto",
  ],
  toolConfirm: [
    "│ Allow execution of [Shell]?                                             │",
    "│                                                                         │",
    "│ ● 1. Allow once                                                         │",
    "│   2. Allow for this session                                             │",
    "│   3. No, suggest changes (esc)                                          │",
    "╰─────────────────────────────────────────────────────────────────────────╯",
    "⚠  Warning: True color (24-bit) support not detected.",
  ],
};

const rule = { readyPattern: GEMINI_READY_PATTERN, blockedPattern: GEMINI_BLOCKED_PATTERN };

describe("a paste Enter was pressed for, on Gemini CLI's screens", () => {
  const patterns = pasteOptionsOf(harnessAdapter("gemini", routing()));
  it.each([
    { screen: "pasted", state: "shown" },
    { screen: "pastedLarge", state: "shown" },
    { screen: "idleYolo", state: "taken" },
    { screen: "thinking", state: "taken" },
    { screen: "toolConfirm", state: "taken" },
    { screen: "resuming", state: "hidden" },
  ] as const)("$screen: $state", ({ screen, state }) => {
    if (patterns.pastedPattern === undefined) throw new Error("gemini has a pasted pattern");
    expect(submitState(screenTail(SCREENS[screen].join("\n")), { ...patterns, pastedPattern: patterns.pastedPattern })).toBe(state);
  });

  it("without a ready pattern, a box that no longer shows the paste took it", () => {
    expect(submitState(SCREENS.resuming.join("\n"), { pastedPattern: GEMINI_PASTED_PATTERN })).toBe("taken");
  });

  it("is bracketed by the-loop, and pressed again with the box's patterns", () => {
    expect(patterns).toMatchObject({ bracketItself: true, submitUntilTaken: true, readyPattern: GEMINI_READY_PATTERN, blockedPattern: GEMINI_BLOCKED_PATTERN });
  });
});

describe("Gemini CLI's screens", () => {
  it.each([
    { screen: "idleYolo", state: "ready", pasted: false },
    { screen: "idleDefault", state: "ready", pasted: false },
    { screen: "thinking", state: "ready", pasted: false },
    { screen: "pasted", state: "ready", pasted: true },
    { screen: "pastedLarge", state: "ready", pasted: true },
    { screen: "resuming", state: "starting", pasted: false },
    { screen: "trust", state: "blocked", pasted: false },
    { screen: "auth", state: "blocked", pasted: false },
    { screen: "apiKey", state: "blocked", pasted: false },
    { screen: "toolConfirm", state: "blocked", pasted: false },
  ] as const)("$screen reads as $state (the box shows a paste: $pasted)", ({ screen, state, pasted }) => {
    const text = `conversation above\n${SCREENS[screen].join("\n")}\n\n`;
    expect(judgeScreen(text, rule)).toBe(state);
    expect(GEMINI_PASTED_PATTERN.test(screenTail(text))).toBe(pasted);
  });

  it("does not take a dialog's words quoted in the conversation for a dialog", () => {
    const text = ["✦ The ticket says: Do you trust the files? ● 1. Allow once", "", ...SCREENS.idleYolo].join("\n");
    expect(judgeScreen(text, rule)).toBe("ready");
  });
});
