import { describe, expect, it } from "vitest";
import { parseWorkItemRef, workItemSlug } from "../../src/workitem/ref.js";

/** What a slug may be: a file name and a tmux session name that no input can escape from. */
const SAFE_SLUG = /^[a-z0-9][a-z0-9-]*$/;
const MAX_SLUG_LENGTH = 69;

const hostile: readonly [string, string][] = [
  ["dot-dot", ".."],
  ["dot", "."],
  ["slash", "/"],
  ["path traversal", "../../etc/passwd"],
  ["absolute path", "/etc/passwd"],
  ["NUL byte", "github:o/r\0#1"],
  ["only NUL bytes", "\0\0\0"],
  ["newline", "github:o/r#1\nrm -rf /"],
  ["carriage return and tab", "a\r\tb"],
  ["unicode letters", "github:ünïcödé/репо#1"],
  ["emoji", "🚀🔥"],
  ["letters whose lower case is ASCII", "\u212A\u0130"],
  ["empty string", ""],
  ["whitespace", "   "],
  ["10,000 characters", "a".repeat(10_000)],
  ["10,000 separators", "/".repeat(10_000)],
  ["tmux target separators", "session:window.pane"],
  ["tmux specials only", ".:"],
  ["leading dash", "-rf"],
  ["shell metacharacters", "$(reboot);`id`|&>*?"],
  ["upper case", "GITHUB:OCTO/REPO#1"],
];

describe("workItemSlug", () => {
  it.each(hostile)("is a safe name for %s", (_case, input) => {
    const slug = workItemSlug(input);
    expect(slug).toMatch(SAFE_SLUG);
    expect(slug.length).toBeLessThanOrEqual(MAX_SLUG_LENGTH);
    expect(slug).not.toBe(".");
    expect(slug).not.toBe("..");
  });

  it("gives every hostile input its own slug", () => {
    const slugs = new Set(hostile.map(([, input]) => workItemSlug(input)));
    expect(slugs.size).toBe(hostile.length);
  });

  it("keeps the readable part of an ordinary ref", () => {
    expect(workItemSlug(parseWorkItemRef("github:octo/repo#15"))).toMatch(/^github-octo-repo-15-[0-9a-f]{8}$/);
    expect(workItemSlug(parseWorkItemRef("local:inbox#7"))).toMatch(/^local-inbox-7-[0-9a-f]{8}$/);
  });

  it("uses the full length for a long ref and still ends in its hash", () => {
    const slug = workItemSlug(`github:${"o".repeat(100)}/${"r".repeat(100)}#1`);
    expect(slug).toHaveLength(MAX_SLUG_LENGTH);
    expect(slug).toMatch(/-[0-9a-f]{8}$/);
  });

  it("separates refs whose readable parts collide", () => {
    const collisions: readonly [string, string][] = [
      ["github:a-b/c#1", "github:a/b-c#1"],
      ["github:a.b/c#1", "github:a/b.c#1"],
      ["github:ghe.example.com/o/r#1", "github:ghe-example.com/o/r#1"],
      [`github:o/${"r".repeat(100)}#1`, `github:o/${"r".repeat(100)}#2`],
    ];
    for (const [a, b] of collisions) {
      expect(workItemSlug(parseWorkItemRef(a)), `${a} vs ${b}`).not.toBe(workItemSlug(parseWorkItemRef(b)));
    }
  });

  it("gives refs that are equal up to case the same slug, from a ref or from its text", () => {
    const canonical = workItemSlug(parseWorkItemRef("github:octo/repo#1"));
    expect(workItemSlug(parseWorkItemRef("github:Octo/Repo#1"))).toBe(canonical);
    expect(workItemSlug("github:octo/repo#1")).toBe(canonical);
    expect(workItemSlug("GitHub:OCTO/Repo#1")).toBe(canonical);
  });

  it("is deterministic", () => {
    for (const [, input] of hostile) expect(workItemSlug(input)).toBe(workItemSlug(input));
    // Pinned, so a change of algorithm (which would orphan every existing record) is noticed.
    expect(workItemSlug(parseWorkItemRef("github:octo/repo#1"))).toBe("github-octo-repo-1-63f9b22f");
    expect(workItemSlug(parseWorkItemRef("local:inbox#7"))).toBe("local-inbox-7-3b8d6ecd");
  });
});
