import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExitError } from "../../src/errors.js";
import { EXCERPT_FIELD_MAX, boundExcerpt } from "../../src/routing/inbound.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import {
  BUILTIN_BOOT_TEMPLATE,
  BUILTIN_EVENT_TEMPLATE,
  BUILTIN_TEMPLATES,
  PROMPT_PLACEHOLDERS,
  PromptTemplateError,
  loadPromptTemplates,
  promptValues,
  renderBootPrompt,
  renderEventPrompt,
  renderTemplate,
  unknownPlaceholders,
} from "../../src/sessions/prompts.js";
import type { PromptInput } from "../../src/sessions/prompts.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";

const workItem: WorkItem = {
  ref: "local:demo#1",
  tracker: "local",
  host: "local",
  repository: "demo",
  number: 1,
  kind: "issue",
  url: "file:///project/.the-loop/tracker/demo/1.json",
  id: "demo-1",
};
const ASK = 'the-loop ask --work-item local:demo#1 "your question"';

function event(overrides: Partial<InboundEvent> = {}): InboundEvent {
  return {
    source: "poll",
    deliveryId: "poll-42",
    kind: "commented",
    trackerEvent: "local:commented",
    workItems: [workItem],
    actor: "alice",
    body: "Please add a --verbose flag.",
    labels: ["the-loop: auto-execute"],
    itemState: "open",
    title: "Add a verbose flag",
    occurredAt: "2025-01-01T00:00:00.000Z",
    excerpt: { comment: "Please add a --verbose flag." },
    ...overrides,
  };
}

const input = (overrides: Partial<PromptInput> = {}, eventOverrides: Partial<InboundEvent> = {}): PromptInput => ({
  workItem,
  event: event(eventOverrides),
  askCommand: ASK,
  ...overrides,
});

describe("renderTemplate", () => {
  it.each([
    ["{{a}}", { a: "x" }, "x"],
    ["{{ a }}", { a: "x" }, "x"],
    ["{{\ta  }}", { a: "x" }, "x"],
    ["<{{a}}{{b}}>", { a: "1", b: "2" }, "<12>"],
    ["{{a}} and {{a}}", { a: "x" }, "x and x"],
    ["{{unknown}} stays", { a: "x" }, "{{unknown}} stays"],
    ["{{ unknown }} stays as written", {}, "{{ unknown }} stays as written"],
    ["{{a}", { a: "x" }, "{{a}"],
    ["{a}", { a: "x" }, "{a}"],
    ["{{a-b}}", { "a-b": "x" }, "{{a-b}}"],
    ["{{{a}}}", { a: "x" }, "{x}"],
    ["{{constructor}} {{toString}}", {}, "{{constructor}} {{toString}}"],
    ["{{a}}", { a: "" }, ""],
    ["no placeholders", { a: "x" }, "no placeholders"],
  ] as const)("%j with %j → %j", (template, values, expected) => {
    expect(renderTemplate(template, values)).toBe(expected);
  });

  it("never re-scans substituted text", () => {
    expect(renderTemplate("{{a}} {{b}}", { a: "{{b}}", b: "{{a}}" })).toBe("{{b}} {{a}}");
  });

  it("keeps replacement patterns in values literal", () => {
    expect(renderTemplate("[{{a}}]", { a: "$& $1 $$ $'" })).toBe("[$& $1 $$ $']");
  });
});

describe("promptValues", () => {
  it("fills every value from the input", () => {
    expect(promptValues(input({ awaitingQuestion: "Which flag name?" }))).toEqual({
      work_item: "local:demo#1",
      title: "Add a verbose flag",
      url: "file:///project/.the-loop/tracker/demo/1.json",
      kind: "commented",
      actor: "alice",
      delivery_id: "poll-42",
      body: "Please add a --verbose flag.",
      excerpt: "comment: Please add a --verbose flag.",
      ask_command: ASK,
      answer_note: 'This event may answer the question you asked: "Which flag name?"',
    });
  });

  it.each([
    ["the input's title wins over the event's", { title: "Known better" }, {}, "title", "Known better"],
    ["no title anywhere", {}, { title: undefined }, "title", "(untitled)"],
    ["a blank title", { title: "  " }, {}, "title", "(untitled)"],
    ["no actor", {}, { actor: null }, "actor", "(unknown)"],
    ["no body", {}, { body: null }, "body", ""],
    ["no excerpt", {}, { excerpt: {} }, "excerpt", ""],
    ["an excerpt of several fields", {}, { excerpt: { comment: "hi", label: "bug" } }, "excerpt", "comment: hi\nlabel: bug"],
    ["no question", {}, {}, "answer_note", ""],
    ["a blank question", { awaitingQuestion: " " }, {}, "answer_note", ""],
  ] as const)("%s", (_name, overrides, eventOverrides, key, expected) => {
    expect(promptValues(input(overrides, eventOverrides))[key]).toBe(expected);
  });

  it("bounds the body", () => {
    const body = "x".repeat(EXCERPT_FIELD_MAX * 3);
    const value = promptValues(input({}, { body })).body ?? "";
    expect(value.length).toBe(EXCERPT_FIELD_MAX + 1);
    expect(value.endsWith("…")).toBe(true);
    expect(value).toBe(boundExcerpt({ body }).body);
  });

  it("bounds the quoted question", () => {
    const note = promptValues(input({ awaitingQuestion: "q".repeat(EXCERPT_FIELD_MAX * 2) })).answer_note ?? "";
    expect(note.length).toBeLessThan(EXCERPT_FIELD_MAX + 100);
  });

  it("produces exactly the documented placeholders", () => {
    const produced = Object.keys(promptValues(input({ awaitingQuestion: "q" }))).sort();
    expect(produced).toEqual(PROMPT_PLACEHOLDERS.map((placeholder) => placeholder.name).sort());
    expect(new Set(PROMPT_PLACEHOLDERS.map((placeholder) => placeholder.name)).size).toBe(PROMPT_PLACEHOLDERS.length);
  });
});

describe("built-in prompts", () => {
  it("the boot prompt names the item, the event, the work and how to ask", () => {
    const prompt = renderBootPrompt(BUILTIN_TEMPLATES, input());
    expect(prompt).toContain("local:demo#1: Add a verbose flag");
    expect(prompt).toContain("file:///project/.the-loop/tracker/demo/1.json");
    expect(prompt).toContain("started this session (commented by alice):\ncomment: Please add");
    expect(prompt).toContain("comment: Please add a --verbose flag.");
    expect(prompt).toMatch(/do the work/);
    expect(prompt).toMatch(/arrive in this session as new input/);
    expect(prompt).toContain(`  ${ASK}\nand then stop and wait`);
    expect(prompt).not.toMatch(/\{\{/);
  });

  it("the event prompt names the event and the question it may answer", () => {
    const prompt = renderEventPrompt(BUILTIN_TEMPLATES, input({ awaitingQuestion: "Which flag name?" }, { body: "Use --verbose.", excerpt: { comment: "Use --verbose." } }));
    expect(prompt).toContain("New event on local:demo#1 (commented by alice):\ncomment: Use --verbose.");
    expect(prompt).toContain("comment: Use --verbose.");
    expect(prompt).toContain('may answer the question you asked: "Which flag name?"');
    expect(prompt).toMatch(/Continue the work/);
    expect(prompt).not.toMatch(/\{\{/);
  });

  it("the event prompt without a question has no note", () => {
    expect(renderEventPrompt(BUILTIN_TEMPLATES, input())).not.toContain("question you asked");
  });

  it("a comment quoting placeholders reaches the agent as written", () => {
    const text = "Try {{work_item}} and {{ask_command}} and {{nope}}";
    const values = { body: text, excerpt: { comment: text } };
    for (const prompt of [renderBootPrompt(BUILTIN_TEMPLATES, input({}, values)), renderEventPrompt(BUILTIN_TEMPLATES, input({}, values))]) {
      expect(prompt).toContain(`comment: ${text}`);
    }
  });

  it("the built-in templates use only known placeholders", () => {
    expect(unknownPlaceholders(BUILTIN_BOOT_TEMPLATE)).toEqual([]);
    expect(unknownPlaceholders(BUILTIN_EVENT_TEMPLATE)).toEqual([]);
    expect(BUILTIN_TEMPLATES).toEqual({ boot: BUILTIN_BOOT_TEMPLATE, event: BUILTIN_EVENT_TEMPLATE });
  });

  it("custom templates render with the same values", () => {
    const templates = { boot: "boot {{ work_item }} by {{actor}} ({{delivery_id}}): {{body}}", event: "event {{kind}}{{answer_note}}" };
    expect(renderBootPrompt(templates, input())).toBe("boot local:demo#1 by alice (poll-42): Please add a --verbose flag.");
    expect(renderEventPrompt(templates, input())).toBe("event commented");
  });
});

describe("unknownPlaceholders", () => {
  it.each([
    ["{{work_item}} {{ title }}", []],
    ["{{work_itme}} {{work_itme}} {{ foo }}", ["work_itme", "foo"]],
    ["{{ }} {work_item}", []],
  ] as const)("%j → %j", (template, expected) => {
    expect(unknownPlaceholders(template)).toEqual(expected);
  });
});

describe("loadPromptTemplates", () => {
  it("keeps the built-ins when nothing is configured", async () => {
    expect(await loadPromptTemplates({})).toEqual({ boot: BUILTIN_BOOT_TEMPLATE, event: BUILTIN_EVENT_TEMPLATE });
  });

  it("reads each configured file, keeping the built-in for the other", async () => {
    const dir = await tempDir();
    const boot = join(dir, "boot.md");
    const eventFile = join(dir, "event.md");
    await writeFile(boot, "Boot {{work_item}}\n");
    await writeFile(eventFile, "Event {{kind}}\n");
    expect(await loadPromptTemplates({ bootFile: boot })).toEqual({ boot: "Boot {{work_item}}\n", event: BUILTIN_EVENT_TEMPLATE });
    expect(await loadPromptTemplates({ eventFile })).toEqual({ boot: BUILTIN_BOOT_TEMPLATE, event: "Event {{kind}}\n" });
    expect(await loadPromptTemplates({ bootFile: boot, eventFile })).toEqual({ boot: "Boot {{work_item}}\n", event: "Event {{kind}}\n" });
  });

  it.each([
    ["bootFile", "routing.spawnPromptTemplate"],
    ["eventFile", "routing.promptTemplate"],
  ] as const)("a missing %s names the file and %s", async (option, configKey) => {
    const dir = await tempDir();
    const file = join(dir, "missing.md");
    const error = await loadPromptTemplates({ [option]: file }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PromptTemplateError);
    expect(error).toBeInstanceOf(ExitError);
    expect(error).toMatchObject({ file, configKey, exitCode: 2, code: "config" });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain(configKey);
    expect((error as Error).message).toContain("does not exist");
  });

  it("an unreadable file names the file and the key", async () => {
    const dir = await tempDir();
    // A directory fails to read as a file whatever the user's privileges (chmod does not stop root).
    const error = await loadPromptTemplates({ eventFile: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PromptTemplateError);
    expect((error as Error).message).toMatch(new RegExp(`routing\\.promptTemplate: .*${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} cannot be read`));
  });

  it("an empty file is refused", async () => {
    const dir = await tempDir();
    const file = join(dir, "empty.md");
    await writeFile(file, " \n\n");
    await expect(loadPromptTemplates({ bootFile: file })).rejects.toThrow(/routing\.spawnPromptTemplate: .*empty\.md is empty/);
  });
});

describe("docs/prompts.md", () => {
  it("lists exactly PROMPT_PLACEHOLDERS, with their meanings", async () => {
    const doc = await readFile(new URL("../../docs/prompts.md", import.meta.url), "utf8");
    const rows = [...doc.matchAll(/^\| `\{\{([a-z_]+)\}\}` \| (.*) \|$/gm)].map((match) => ({ name: match[1], meaning: match[2] }));
    expect(rows).toEqual(PROMPT_PLACEHOLDERS.map(({ name, meaning }) => ({ name, meaning })));
  });

  it("names both config keys", async () => {
    const doc = await readFile(new URL("../../docs/prompts.md", import.meta.url), "utf8");
    expect(doc).toContain("spawnPromptTemplate");
    expect(doc).toContain("promptTemplate:");
    expect(doc).toContain(`${EXCERPT_FIELD_MAX.toLocaleString("en-US")} characters`);
  });
});
