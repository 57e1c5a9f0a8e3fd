import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LIFECYCLE_POINTS } from "../../src/sdk/hooks/catalog.js";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

interface Listing {
  name: string;
  kind: string;
  target: string;
  resolved?: string;
  points: string[] | null;
  required: boolean;
  enabled: boolean;
  tokenEnv?: string;
  timeoutSeconds?: number;
  headers: string[];
}

/** A project whose `.the-loop/cli-config.yaml` holds `yaml`. */
async function project(yaml: string): Promise<{ cwd: string; configDir: string }> {
  const cwd = await tempDir();
  const configDir = join(cwd, ".the-loop");
  await mkdir(configDir);
  await writeFile(join(configDir, "cli-config.yaml"), yaml);
  return { cwd, configDir };
}

/** The modules DECLARATION's enabled local entries name, so that it loads as a daemon would load it. */
async function declaredModules(configDir: string): Promise<void> {
  await mkdir(join(configDir, "hooks"), { recursive: true });
  const hook = (method: string): string =>
    `import { LifecycleHooks } from "the-loop/sdk/hooks";\nexport class H extends LifecycleHooks { ${method}() { return undefined; } }\n`;
  await writeFile(join(configDir, "hooks", "allowed-hours.mjs"), hook("workItemStart"));
  await writeFile(join(configDir, "hooks", "prompt-prefix.ts"), hook("override sessionSpawn"));
}

/** A hook module that leaves a marker file and throws when anything imports it. */
async function trap(path: string, marker: string): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(
    path,
    `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "imported");\nthrow new Error("this hook module must not be imported");\n`,
  );
}

/** An HTTP server that counts every request it receives. */
async function countingServer(): Promise<{ url: string; requests: () => number }> {
  let count = 0;
  const server = createServer((_request, response) => {
    count += 1;
    response.writeHead(200, { "content-type": "application/json" }).end('{"jsonrpc":"2.0","id":1,"result":null}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, requests: () => count };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const DECLARATION = `hooks:
  - name: office-hours
    path: hooks/allowed-hours.mjs
    with: {from: 9, to: 18}
    on: [work_item_start]
    required: true
  - name: house-rules
    path: hooks/prompt-prefix.ts
  - name: compliance
    url: https://compliance.example.com/hooks
    tokenEnv: COMPLIANCE_TOKEN
    headers: {X-Team: platform}
    timeoutSeconds: 5
  - name: shared
    module: "@acme/loop-hooks"
    enabled: false
`;

describe("the-loop hooks", () => {
  it("lists every entry with its kind, target, points, required and enabled", async () => {
    const { cwd, configDir } = await project(DECLARATION);
    await declaredModules(configDir);
    const result = await runCli(["hooks"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^name\s+kind\s+points\s+required\s+enabled\s+target$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^office-hours\\s+path\\s+work_item_start\\s+yes\\s+yes\\s+hooks/allowed-hours\\.mjs \\(resolves to ${join(configDir, "hooks", "allowed-hours.mjs")}\\)$`,
      ),
    );
    expect(lines[2]).toMatch(/^house-rules\s+path\s+default: every point it overrides\s+no\s+yes\s+hooks\/prompt-prefix\.ts /);
    expect(lines[3]).toMatch(/^compliance\s+url\s+all\s+no\s+yes\s+https:\/\/compliance\.example\.com\/hooks \(bearer token from \$COMPLIANCE_TOKEN\)$/);
    expect(lines[4]).toMatch(/^shared\s+module\s+default: every point it overrides\s+no\s+no\s+@acme\/loop-hooks$/);
    expect(lines).toHaveLength(5);
  });

  it("prints the entries as JSON with stable fields, header names only and no token", async () => {
    const { configDir } = await project(DECLARATION);
    await declaredModules(configDir);
    // Run from elsewhere: a path resolves against the config file's folder, not the working directory.
    const elsewhere = await tempDir();
    const result = await runCli(["--config", join(configDir, "cli-config.yaml"), "hooks", "--json"], {
      cwd: elsewhere,
      env: { COMPLIANCE_TOKEN: "s3cret-value" },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf<Listing[]>(result)).toEqual([
      {
        name: "office-hours",
        kind: "path",
        target: "hooks/allowed-hours.mjs",
        resolved: join(configDir, "hooks", "allowed-hours.mjs"),
        points: ["work_item_start"],
        required: true,
        enabled: true,
        headers: [],
      },
      {
        name: "house-rules",
        kind: "path",
        target: "hooks/prompt-prefix.ts",
        resolved: join(configDir, "hooks", "prompt-prefix.ts"),
        points: null,
        required: false,
        enabled: true,
        headers: [],
      },
      {
        name: "compliance",
        kind: "url",
        target: "https://compliance.example.com/hooks",
        points: null,
        required: false,
        enabled: true,
        tokenEnv: "COMPLIANCE_TOKEN",
        timeoutSeconds: 5,
        headers: ["X-Team"],
      },
      { name: "shared", kind: "module", target: "@acme/loop-hooks", points: null, required: false, enabled: false, headers: [] },
    ]);
    expect(result.stdout).not.toContain("s3cret-value");
    expect(result.stdout).not.toContain("platform");
  });

  it("says when no hooks are declared, and where to read how", async () => {
    const bare = await tempDir();
    const none = await runCli(["hooks"], { cwd: bare });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("no config file, so no hooks; docs/hooks.md shows how to declare one\n");
    expect(jsonOf(await runCli(["hooks", "--json"], { cwd: bare }))).toEqual([]);

    const { cwd } = await project("hooks: []\n");
    const empty = await runCli(["hooks"], { cwd });
    expect(empty.stdout).toBe("no hooks declared in .the-loop/cli-config.yaml; docs/hooks.md shows how to declare one\n");
    expect(jsonOf(await runCli(["hooks", "--json"], { cwd }))).toEqual([]);
  });

  it("exits 1 naming the entry when the declaration cannot be read", async () => {
    const { cwd } = await project(`hooks:
  - name: fine
    url: https://hooks.example.com/
  - name: audit
    path: audit.mjs
    on: [session.spawned]
`);
    const result = await runCli(["hooks"], { cwd });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      'error: cannot read the hooks declaration in .the-loop/cli-config.yaml: hooks[1] "audit": on names "session.spawned", which is not a hook point',
    );
    expect(result.stderr).toContain("the points are work_item_start, session_spawn,");

    const json = await runCli(["hooks", "--json"], { cwd });
    expect(json.code).toBe(1);
    expect(jsonOf<{ error: { message: string } }>(json).error.message).toContain('hooks[1] "audit"');
  });

  it("exits 1 naming the error when the config file itself cannot be read (R5.1), text and --json alike", async () => {
    const cases: [string, string | undefined, RegExp][] = [
      // Invalid elsewhere than hooks: the declaration cannot be read either.
      ["state:\n  root: s\nbogus: 1\nhooks:\n  - {name: a, url: https://x.example/}\n", undefined, /bogus: unknown key/],
      ["state: [\n", undefined, /YAML syntax/],
      ["hooks: {name: a}\n", undefined, /hooks: expected array/],
      // --config naming a file that is not there.
      ["", "missing.yaml", /missing\.yaml \(named by --config\) does not exist/],
    ];
    for (const [yaml, config, message] of cases) {
      const { cwd } = await project(yaml);
      const args = [...(config === undefined ? [] : ["--config", config]), "hooks"];
      const result = await runCli(args, { cwd });
      expect(result.code, `${args.join(" ")} on ${JSON.stringify(yaml)}: ${result.stderr}`).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(/^error: cannot read the hooks declaration: /);
      expect(result.stderr).toMatch(message);

      const json = await runCli([...args, "--json"], { cwd });
      expect(json.code).toBe(1);
      const error = jsonOf<{ error: { code: string; message: string } }>(json).error;
      expect(error.code).toBe("config");
      expect(error.message).toMatch(message);
    }
  });

  it("names a duplicate, a cleartext token URL and an unknown key as the daemon's load would", async () => {
    const cases: [string, RegExp][] = [
      ["  - {name: a, url: https://x.example/}\n  - {name: a, path: a.mjs}\n", /hooks\[1\] "a": the name "a" is declared twice/],
      ["  - {name: t, url: http://hooks.example.com/, tokenEnv: T}\n", /hooks\[0\] "t": url http:\/\/hooks\.example\.com is plain http:\/\/.*use https:\/\//],
      ["  - {name: k, path: k.mjs, colour: red}\n", /hooks\[0\] "k": .*colour/],
      ["  - {name: w, url: https://x.example/, with: {a: 1}}\n", /hooks\[0\] "w": with applies to module and path entries only/],
    ];
    for (const [entries, message] of cases) {
      const { cwd } = await project(`hooks:\n${entries}`);
      const result = await runCli(["hooks"], { cwd });
      expect(result.code, entries).toBe(1);
      expect(result.stderr, entries).toMatch(message);
    }
  });

  it("imports each local module as the daemon would, away from its own process, and contacts no URL", async () => {
    const server = await countingServer();
    const { cwd, configDir } = await project(`hooks:
  - name: remote
    url: ${server.url}
    tokenEnv: TRAP_TOKEN
  - name: by-path
    path: hooks/trap.mjs
`);
    const marker = join(cwd, "imported.marker");
    await trap(join(configDir, "hooks", "trap.mjs"), marker);

    const listed = await runCli(["hooks"], { cwd, env: { TRAP_TOKEN: "trap-token-value" } });
    expect(listed.code, listed.stderr).toBe(1);
    expect(listed.stderr).toContain(
      `error: the hooks declared in .the-loop/cli-config.yaml do not load: hooks[1] "by-path": importing ${join(configDir, "hooks", "trap.mjs")} failed: this hook module must not be imported; the daemon refuses to start on it; fix the entry, or set enabled: false on it until it loads`,
    );
    const json = await runCli(["hooks", "--json"], { cwd, env: { TRAP_TOKEN: "trap-token-value" } });
    expect(json.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(json).error).toMatchObject({
      code: "config",
      message: expect.stringContaining('hooks[1] "by-path": importing'),
    });
    const validated = await runCli(["config", "validate"], { cwd, env: { TRAP_TOKEN: "trap-token-value" } });
    expect(validated.code, validated.stderr).toBe(2);
    expect(validated.stderr).toContain('.the-loop/cli-config.yaml:5:5: hooks[1] "by-path": importing');
    for (const result of [listed, json, validated]) expect(result.stdout + result.stderr).not.toContain("trap-token-value");
    expect(existsSync(marker), "the module was imported").toBe(true);
    expect(server.requests(), "a hook URL was contacted").toBe(0);
  });

  it("lists a command entry with its argv resolved and its env names, and never runs it", async () => {
    const { cwd, configDir } = await project(`hooks:
  - name: audit
    command: [./hooks/audit.mjs, --quiet]
    env: [AUDIT_URL]
    on: [session_spawned]
  - name: jq-gate
    command: [jq, .]
    timeoutSeconds: 2
`);
    const marker = join(cwd, "ran.marker");
    await mkdir(join(configDir, "hooks"));
    await writeFile(join(configDir, "hooks", "audit.mjs"), `#!/bin/sh\ntouch ${JSON.stringify(marker)}\n`, { mode: 0o755 });
    const listed = jsonOf<Listing[]>(await runCli(["hooks", "--json"], { cwd, env: { AUDIT_URL: "https://audit.example/secret-path" } }));
    expect(listed).toEqual([
      {
        name: "audit",
        kind: "command",
        target: "./hooks/audit.mjs",
        resolved: join(configDir, "hooks", "audit.mjs"),
        points: ["session_spawned"],
        required: false,
        enabled: true,
        command: [join(configDir, "hooks", "audit.mjs"), "--quiet"],
        env: ["AUDIT_URL"],
        timeoutSeconds: 5,
        headers: [],
      },
      {
        name: "jq-gate",
        kind: "command",
        target: "jq",
        points: null,
        required: false,
        enabled: true,
        command: ["jq", "."],
        env: [],
        timeoutSeconds: 2,
        headers: [],
      },
    ]);
    const table = await runCli(["hooks"], { cwd });
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`["${join(configDir, "hooks", "audit.mjs")}","--quiet"]`);
    expect(existsSync(marker), "a command was run").toBe(false);
  });
});

describe("the-loop hooks points", () => {
  it("lists each point with when it fires, its facts and its decisions", async () => {
    const result = await runCli(["hooks", "points"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    for (const point of LIFECYCLE_POINTS) expect(result.stdout).toMatch(new RegExp(`^${point.name}\\n  what: `, "m"));
    const spawn = /^session_spawn\n([\s\S]*?)\n\n/m.exec(result.stdout)?.[1] ?? "";
    expect(spawn).toMatch(/^ {2}method: {4}sessionSpawn$/m);
    expect(spawn).toMatch(/^ {2}fires: {5}After the session is claimed/m);
    expect(spawn).toMatch(/^ {2}facts: {5}workItem: work-item — The work item: ref, tracker, host,/m);
    expect(spawn).toMatch(/^ {13}actor: string — Whose event or command led to the launch\.$/m);
    expect(spawn).toMatch(/^ {2}decisions: proceed: boolean — Whether the-loop goes ahead \(default true\)\./m);
    expect(spawn).toMatch(/^ {13}prompt: string — The text handed to the harness on launch \(default:$/m);
    expect(spawn).toMatch(/^ {15}the rendered boot prompt\)\. Replaces the launch text\.$/m);
    expect(result.stdout).toMatch(/^input_received\n[\s\S]*?^ {2}decisions: none \(observation only\)$/m);
    for (const line of result.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
  });

  it("says, for a person, everything the catalog says: every fact and decision with its description", async () => {
    const result = await runCli(["hooks", "points"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    const text = result.stdout.replace(/\s+/g, " ");
    for (const point of LIFECYCLE_POINTS) {
      expect(text, point.name).toContain(` what: ${point.description} `);
      expect(text, point.name).toContain(` fires: ${point.fires} `);
      for (const [name, spec] of Object.entries(point.facts)) expect(text, `${point.name}.${name}`).toContain(`${name}: ${spec.kind} — ${spec.description}`);
      const decisions: Record<string, { kind: string; description: string; applies: string }> = point.decisions;
      for (const [name, spec] of Object.entries(decisions)) {
        expect(text, `${point.name}.${name}`).toContain(`${name}: ${spec.kind} — ${spec.description} ${spec.applies}`);
      }
    }
  });

  it("prints the catalog under --json", async () => {
    const result = await runCli(["hooks", "points", "--family", "lifecycle", "--json"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf(result)).toEqual(JSON.parse(JSON.stringify(LIFECYCLE_POINTS)));
  });

  it("colours only when asked, and never under NO_COLOR", async () => {
    const cwd = await tempDir();
    const forced = await runCli(["hooks", "points"], { cwd, env: { NO_COLOR: undefined, FORCE_COLOR: "1" } });
    expect(forced.stdout).toContain("\u001b[");
    const plain = await runCli(["hooks", "points"], { cwd, env: { NO_COLOR: "1", FORCE_COLOR: "1" } });
    expect(plain.stdout).not.toContain("\u001b[");
  });
});

describe("the-loop config validate with hooks", () => {
  it("reports a bad entry like any config problem: file, line, entry, exit 2", async () => {
    const { cwd } = await project(`state:
  root: s
hooks:
  - name: fine
    url: https://hooks.example.com/
  - name: both
    path: a.mjs
    url: https://hooks.example.com/
`);
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'error: invalid config: .the-loop/cli-config.yaml:6:5: hooks[1] "both": give exactly one of module, path, url or command (it has path and url)',
    );
    const json = await runCli(["config", "validate", "--json"], { cwd });
    expect(json.code).toBe(2);
    expect(jsonOf<{ error: { code: string } }>(json).error.code).toBe("config");
  });

  it("reports every bad entry at once, and beside the config's other problems", async () => {
    const { cwd } = await project(`hooks:
  - name: Caps
    url: https://hooks.example.com/
  - name: fine
    url: https://hooks.example.com/
  - name: fine
    path: fine.mjs
  - name: both
    path: a.mjs
    url: https://hooks.example.com/
`);
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toEqual([
      "error: invalid config .the-loop/cli-config.yaml: 3 problems",
      `  .the-loop/cli-config.yaml:2:5: hooks[0] "Caps": name: lowercase letters, digits and '-', starting with a letter`,
      '  .the-loop/cli-config.yaml:6:5: hooks[2] "fine": the name "fine" is declared twice; names must be unique',
      '  .the-loop/cli-config.yaml:8:5: hooks[3] "both": give exactly one of module, path, url or command (it has path and url)',
    ]);

    const mixed = await project(`state:
  root: 5
hooks:
  - name: t
    url: http://hooks.example.com/
    tokenEnv: T
`);
    const both = await runCli(["config", "validate", "--json"], { cwd: mixed.cwd });
    expect(both.code).toBe(2);
    const error = jsonOf<{ error: { code: string; message: string; details: string[] } }>(both).error;
    expect(error.code).toBe("config");
    expect(error.message).toBe("invalid config .the-loop/cli-config.yaml: 2 problems");
    expect(error.details).toEqual([
      ".the-loop/cli-config.yaml:2:3: state.root: expected string, received number",
      expect.stringMatching(/^\.the-loop\/cli-config\.yaml:4:5: hooks\[0\] "t": url http:\/\/hooks\.example\.com is plain http:\/\//),
    ]);
  });

  it("accepts a good declaration", async () => {
    const { cwd, configDir } = await project(DECLARATION);
    await declaredModules(configDir);
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("config OK");
  });
});
