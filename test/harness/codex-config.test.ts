import { mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { basicString, codexConfigFile, codexTrustDir, codexTrustDirs, ensureCodexTrust, headerKey, withCodexTrust } from "../../src/harness/codex-config.js";
import { tempDir } from "../support/temp.js";

const SECTION = '[projects."/w/a"]\ntrust_level = "trusted"\n';

describe("withCodexTrust", () => {
  it.each([
    { name: "an empty file gets the section", text: "", out: SECTION },
    {
      name: "a file of other keys keeps them, comments and blank lines included, and gets the section at its end",
      text: '# my settings\nmodel = "o3"\n\n[tui]\nanimations = false # quiet\n',
      out: `# my settings\nmodel = "o3"\n\n[tui]\nanimations = false # quiet\n\n${SECTION}`,
    },
    {
      name: "a last line without a newline gets one",
      text: 'model = "o3"',
      out: `model = "o3"\n\n${SECTION}`,
    },
    {
      name: "an untrusted entry is set to trusted, its comment and other keys kept",
      text: '[projects."/w/a"]\nfoo = 1\n  trust_level = "untrusted" # was asked\n[other]\nx = 2\n',
      out: '[projects."/w/a"]\nfoo = 1\n  trust_level = "trusted" # was asked\n[other]\nx = 2\n',
    },
    {
      name: "a section without the key gets it under its header",
      text: '[projects."/w/a"]\nfoo = 1\n\n[other]\n',
      out: '[projects."/w/a"]\ntrust_level = "trusted"\nfoo = 1\n\n[other]\n',
    },
    {
      name: "a header spelled with a literal string and spaces is the same section",
      text: "[ projects . '/w/a' ] # mine\ntrust_level = 'untrusted'\n",
      out: "[ projects . '/w/a' ] # mine\ntrust_level = \"trusted\"\n",
    },
    {
      name: "another folder's section, and one whose name only starts the same, are left alone",
      text: '[projects."/w/a/b"]\ntrust_level = "untrusted"\n[projects."/w"]\ntrust_level = "untrusted"\n',
      out: `[projects."/w/a/b"]\ntrust_level = "untrusted"\n[projects."/w"]\ntrust_level = "untrusted"\n\n${SECTION}`,
    },
    {
      name: "a header inside a multi-line string is text, not a section",
      text: 'instructions = """\n[projects."/w/a"]\ntrust_level = "untrusted"\n"""\n',
      out: `instructions = """\n[projects."/w/a"]\ntrust_level = "untrusted"\n"""\n\n${SECTION}`,
    },
    {
      name: "an array value's continuation line is not a header",
      text: '[projects."/w/a"]\nlist = [\n  [1, 2],\n]\ntrust_level = "untrusted"\n',
      out: '[projects."/w/a"]\nlist = [\n  [1, 2],\n]\ntrust_level = "trusted"\n',
    },
    {
      name: "CRLF line ends stay CRLF",
      text: '[projects."/w/a"]\r\nfoo = 1\r\n',
      out: '[projects."/w/a"]\r\ntrust_level = "trusted"\r\nfoo = 1\r\n',
    },
  ])("$name", ({ text, out }) => {
    const edit = withCodexTrust(text, ["/w/a"]);
    expect(edit).toEqual({ changed: true, text: out });
    // Idempotent: the written text needs no second edit.
    expect(withCodexTrust(out, ["/w/a"])).toEqual({ changed: false });
  });

  it("leaves a file alone that already trusts the folder", () => {
    expect(withCodexTrust(`model = "o3"\n${SECTION}`, ["/w/a"])).toEqual({ changed: false });
    expect(withCodexTrust("[projects.'/w/a']\ntrust_level='trusted'", ["/w/a"])).toEqual({ changed: false });
  });

  it("trusts each spelling of a folder once", () => {
    const edit = withCodexTrust("", ["/w/link", "/w/real"]);
    expect(edit).toEqual({ changed: true, text: '[projects."/w/link"]\ntrust_level = "trusted"\n\n[projects."/w/real"]\ntrust_level = "trusted"\n' });
  });

  it.each([
    { name: "projects as an inline table at the top", text: 'projects = { "/w/a" = { trust_level = "untrusted" } }\n', reason: /top level/ },
    { name: "projects as dotted keys at the top", text: 'projects."/w/a".trust_level = "untrusted"\n', reason: /top level/ },
    { name: "the folder as a dotted key under [projects]", text: '[projects]\n"/w/a".trust_level = "untrusted"\n', reason: /outside/ },
    { name: "the folder as an inline table under [projects]", text: "[projects]\n'/w/a' = { trust_level = \"untrusted\" }\n", reason: /outside/ },
    { name: "the section twice", text: `${SECTION}${SECTION}`, reason: /more than once/ },
    { name: "a trust_level that is not a plain string", text: '[projects."/w/a"]\ntrust_level = """trusted"""\n', reason: /not a plain string/ },
    { name: "a multi-line string that never ends", text: 'x = """\nnever closed\n', reason: /never ends/ },
  ])("refuses to edit $name", ({ text, reason }) => {
    const edit = withCodexTrust(text, ["/w/a"]);
    expect(edit).toHaveProperty("refused");
    expect("refused" in edit && edit.refused).toMatch(reason);
  });

  it("writes a folder with quotes, backslashes and control characters as a valid basic string, and reads it back", () => {
    const dir = '/w/we"ird\\dir\tx';
    expect(basicString(dir)).toBe('"/w/we\\"ird\\\\dir\\tx"');
    const edit = withCodexTrust("", [dir]);
    expect(edit).toEqual({ changed: true, text: `[projects.${basicString(dir)}]\ntrust_level = "trusted"\n` });
    expect(headerKey(`[projects.${basicString(dir)}]\n`)).toEqual(["projects", dir]);
    expect(withCodexTrust(edit && "text" in edit ? edit.text : "", [dir])).toEqual({ changed: false });
  });

  it.each([
    { line: '[projects."/a"]', key: ["projects", "/a"] },
    { line: "[ a . b.'c d' ] # note", key: ["a", "b", "c d"] },
    { line: '[projects."\\u00e9"]', key: ["projects", "é"] },
    { line: "[1, 2],", key: undefined },
    { line: '[projects."/a" extra]', key: undefined },
    { line: '[projects."bad \\q escape"]', key: undefined },
  ])("reads the header $line", ({ line, key }) => {
    expect(headerKey(line)).toEqual(key);
  });
});

describe("codexTrustDir", () => {
  it("is the repository's root for a folder inside it, and the folder itself outside any", async () => {
    const root = await tempDir();
    await mkdir(join(root, "repo", ".git"), { recursive: true });
    await mkdir(join(root, "repo", "src", "deep"), { recursive: true });
    await mkdir(join(root, "plain"));
    expect(codexTrustDir(join(root, "repo", "src", "deep"))).toBe(join(root, "repo"));
    expect(codexTrustDir(join(root, "repo"))).toBe(join(root, "repo"));
    expect(codexTrustDir(join(root, "plain"))).toBe(join(root, "plain"));
  });

  it("is the main repository's root for a linked worktree, as git's commondir names it", async () => {
    const root = await tempDir();
    const gitDir = join(root, "main", ".git", "worktrees", "wt");
    await mkdir(gitDir, { recursive: true });
    await writeFile(join(gitDir, "commondir"), "../..\n");
    await mkdir(join(root, "checkouts", "wt"), { recursive: true });
    await writeFile(join(root, "checkouts", "wt", ".git"), `gitdir: ${gitDir}\n`);
    expect(codexTrustDir(join(root, "checkouts", "wt"))).toBe(join(root, "main"));
  });

  it("adds the resolved spelling of a symlinked folder", async () => {
    const root = await tempDir();
    await mkdir(join(root, "real"));
    await symlink(join(root, "real"), join(root, "link"));
    expect(codexTrustDirs(join(root, "link"))).toEqual([join(root, "link"), join(root, "real")]);
  });
});

describe("ensureCodexTrust", () => {
  it("creates a private config in a home Codex has not made yet", async () => {
    const home = join(await tempDir(), "codex-home");
    const file = codexConfigFile({ CODEX_HOME: home });
    expect(await ensureCodexTrust({ file, dirs: ["/w/a"] })).toMatchObject({ kind: "written" });
    expect(await readFile(file, "utf8")).toBe(SECTION);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await ensureCodexTrust({ file, dirs: ["/w/a"] })).toMatchObject({ kind: "unchanged" });
  });

  it("keeps an existing file's mode and every other line", async () => {
    const home = await tempDir();
    const file = join(home, "config.toml");
    await writeFile(file, '# keep me\nmodel_provider = "stub"\n', { mode: 0o644 });
    expect(await ensureCodexTrust({ file, dirs: ["/w/a"] })).toMatchObject({ kind: "written" });
    expect(await readFile(file, "utf8")).toBe(`# keep me\nmodel_provider = "stub"\n\n${SECTION}`);
    expect((await stat(file)).mode & 0o777).toBe(0o644);
  });

  it("leaves a file it cannot edit with certainty as it is, and says why", async () => {
    const home = await tempDir();
    const file = join(home, "config.toml");
    const text = 'projects = { "/w/a" = { trust_level = "untrusted" } }\n';
    await writeFile(file, text);
    const outcome = await ensureCodexTrust({ file, dirs: ["/w/a"] });
    expect(outcome).toMatchObject({ kind: "failed" });
    expect(outcome.kind === "failed" && outcome.error).toMatch(/left as it is/);
    expect(await readFile(file, "utf8")).toBe(text);
  });

  it("is $CODEX_HOME's config, else ~/.codex's", () => {
    expect(codexConfigFile({ CODEX_HOME: "/opt/codex" })).toBe("/opt/codex/config.toml");
    expect(codexConfigFile({ HOME: "/home/op" })).toBe("/home/op/.codex/config.toml");
  });
});
