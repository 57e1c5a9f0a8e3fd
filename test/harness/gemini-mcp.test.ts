import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureGeminiConfig } from "../../src/harness/gemini-config.js";
import { geminiMcpEntry, geminiMcpToolNames, mergeGeminiMcp, SESSION_TOKEN_ENV } from "../../src/harness/gemini-mcp.js";
import { tempDir } from "../support/temp.js";

const ENTRY = { command: "the-loop", args: ["mcp"], trust: true, includeTools: ["ask", "graph_complete", "graph_status", "why"] };
const ALLOWED = { environmentVariableRedaction: { allowed: [SESSION_TOKEN_ENV] } };

describe("mergeGeminiMcp", () => {
  it("writes the server with its four tools alone trusted, and Gemini names them mcp_the-loop_<tool>", () => {
    expect(geminiMcpEntry()).toEqual(ENTRY);
    expect(geminiMcpToolNames()).toEqual(["mcp_the-loop_ask", "mcp_the-loop_graph_complete", "mcp_the-loop_graph_status", "mcp_the-loop_why"]);
  });

  const cases: { name: string; config: Record<string, unknown>; enabled: boolean; expected: Record<string, unknown> | "unchanged" | RegExp }[] = [
    { name: "no file (empty settings)", config: {}, enabled: true, expected: { mcpServers: { "the-loop": ENTRY }, security: ALLOWED } },
    {
      name: "other keys stay",
      config: { general: { vimMode: true }, security: { auth: { selectedType: "oauth-personal" } } },
      enabled: true,
      expected: { general: { vimMode: true }, mcpServers: { "the-loop": ENTRY }, security: { auth: { selectedType: "oauth-personal" }, ...ALLOWED } },
    },
    {
      name: "other servers and allowed names stay",
      config: { mcpServers: { github: { command: "gh-mcp" } }, security: { environmentVariableRedaction: { allowed: ["MY_VAR"], enabled: true } } },
      enabled: true,
      expected: {
        mcpServers: { github: { command: "gh-mcp" }, "the-loop": ENTRY },
        security: { environmentVariableRedaction: { allowed: ["MY_VAR", SESSION_TOKEN_ENV], enabled: true } },
      },
    },
    { name: "already registered", config: { mcpServers: { "the-loop": ENTRY }, security: ALLOWED }, enabled: true, expected: "unchanged" },
    {
      name: "the operator's own entry under the name",
      config: { mcpServers: { "the-loop": { command: "/opt/the-loop", args: ["mcp"] } } },
      enabled: true,
      expected: /operator's/,
    },
    { name: "mcpServers that is not an object", config: { mcpServers: [] }, enabled: true, expected: /not an object/ },
    {
      name: "an allowlist that is not a list",
      config: { security: { environmentVariableRedaction: { allowed: "X" } } },
      enabled: true,
      expected: /not a list/,
    },
    { name: "disabled, nothing there", config: { general: { vimMode: true } }, enabled: false, expected: "unchanged" },
    {
      name: "disabled: the-loop's entry and its variable go, the rest stays",
      config: {
        mcpServers: { github: { command: "gh-mcp" }, "the-loop": ENTRY },
        security: { environmentVariableRedaction: { allowed: ["MY_VAR", SESSION_TOKEN_ENV] } },
      },
      enabled: false,
      expected: { mcpServers: { github: { command: "gh-mcp" } }, security: { environmentVariableRedaction: { allowed: ["MY_VAR"] } } },
    },
    {
      name: "disabled: the operator's own entry stays",
      config: { mcpServers: { "the-loop": { command: "/opt/the-loop", args: ["mcp"] } } },
      enabled: false,
      expected: "unchanged",
    },
  ];
  for (const { name, config, enabled, expected } of cases) {
    it(name, () => {
      const before = structuredClone(config);
      const merged = mergeGeminiMcp(config, enabled);
      expect(config).toEqual(before);
      if (expected === "unchanged") expect(merged).toEqual({ changed: false });
      else if (expected instanceof RegExp) expect("refused" in merged ? merged.refused : "").toMatch(expected);
      else expect(merged).toMatchObject({ changed: true, config: expected });
    });
  }
});

describe("ensureGeminiConfig with the MCP server", () => {
  it("registers it in settings.json beside the pre-seeded keys, and takes it out when turned off", async () => {
    const dir = await tempDir();
    const settingsFile = join(dir, "settings.json");
    const trustFile = join(dir, "trustedFolders.json");
    const on = await ensureGeminiConfig({ settingsFile, trustFile, dirs: [dir], mcp: true });
    expect(on.mcp).toMatchObject({ kind: "written" });
    const written = JSON.parse(await readFile(settingsFile, "utf8")) as Record<string, unknown>;
    expect(written).toMatchObject({ mcpServers: { "the-loop": ENTRY }, security: { auth: { selectedType: "gemini-api-key" }, ...ALLOWED } });
    expect((await ensureGeminiConfig({ settingsFile, trustFile, dirs: [dir], mcp: true })).mcp.kind).toBe("unchanged");

    const off = await ensureGeminiConfig({ settingsFile, trustFile, dirs: [dir], mcp: false });
    expect(off.mcp).toMatchObject({ kind: "written" });
    const after = JSON.parse(await readFile(settingsFile, "utf8")) as { mcpServers: Record<string, unknown> };
    expect(after.mcpServers).toEqual({});
    expect(after).toMatchObject({ security: { environmentVariableRedaction: { allowed: [] } } });
  });

  it("leaves an operator's own entry and says so", async () => {
    const dir = await tempDir();
    const settingsFile = join(dir, "settings.json");
    const own = { mcpServers: { "the-loop": { command: "/opt/the-loop", args: ["mcp"] } } };
    await writeFile(settingsFile, JSON.stringify(own));
    const outcome = await ensureGeminiConfig({ settingsFile, trustFile: join(dir, "trustedFolders.json"), dirs: [dir], mcp: true });
    expect(outcome.mcp).toMatchObject({ kind: "failed" });
    expect(outcome.mcp.kind === "failed" ? outcome.mcp.error : "").toContain("/opt/the-loop");
    expect(JSON.parse(await readFile(settingsFile, "utf8"))).toMatchObject(own);
  });
});
