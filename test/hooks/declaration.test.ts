import { describe, expect, it, vi } from "vitest";
import { DEFAULT_HOOK_TIMEOUT_SECONDS, HookDeclarationError, isLoopbackHost, parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { DeclarationContext, LocalHookEntry, RemoteHookEntry } from "../../src/hooks/declaration.js";
import { LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";

const CONTEXT: DeclarationContext = { configDir: "/etc/the-loop", points: LIFECYCLE_POINT_NAMES, homeDir: "/home/op" };

function parse(raw: unknown, context: DeclarationContext = CONTEXT) {
  return parseHookDeclaration(raw, context);
}

function failure(raw: unknown): string {
  try {
    parse(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(HookDeclarationError);
    return (error as Error).message;
  }
  throw new Error("the declaration loaded");
}

describe("parseHookDeclaration: R3.1 the list", () => {
  it.each([undefined, null, []])("%j declares no hooks", (raw) => {
    expect(parse(raw)).toEqual([]);
  });

  it("a value that is not a list fails", () => {
    expect(failure({ name: "a", path: "a.mjs" })).toMatch(/hooks must be a list/);
  });

  it("keeps the declared order and fills the defaults", () => {
    const entries = parse([
      { name: "fmt", path: "hooks/fmt.mjs" },
      { name: "audit", url: "https://hooks.example/rpc" },
      { name: "acme", module: "@acme/hooks/lifecycle" },
    ]);
    expect(entries.map((entry) => [entry.name, entry.kind])).toEqual([
      ["fmt", "path"],
      ["audit", "url"],
      ["acme", "module"],
    ]);
    expect(entries[0]).toEqual({
      name: "fmt",
      kind: "path",
      target: "hooks/fmt.mjs",
      resolved: "/etc/the-loop/hooks/fmt.mjs",
      options: {},
      required: false,
      enabled: true,
    } satisfies LocalHookEntry);
    const remote = entries[1] as RemoteHookEntry;
    expect([remote.url.href, remote.headers, remote.timeoutSeconds, remote.required, remote.enabled, remote.on]).toEqual([
      "https://hooks.example/rpc",
      {},
      DEFAULT_HOOK_TIMEOUT_SECONDS,
      false,
      true,
      undefined,
    ]);
    expect(entries[2]).toMatchObject({ kind: "module", target: "@acme/hooks/lifecycle", resolved: "@acme/hooks/lifecycle" });
  });

  it.each([
    ["a missing name", { path: "a.mjs" }, /^hooks\[0\]: name: /],
    ["a name that is not lowercase", { name: "Audit", path: "a.mjs" }, /^hooks\[0\] "Audit": name: lowercase letters/],
    ["a name with a space", { name: "my hook", path: "a.mjs" }, /name: lowercase letters/],
    ["an empty name", { name: "", path: "a.mjs" }, /^hooks\[0\]: name: /],
  ])("%s fails naming the entry", (_title, entry, message) => {
    expect(failure([entry])).toMatch(message);
  });

  it("a duplicate name fails naming the second entry", () => {
    expect(
      failure([
        { name: "a", path: "a.mjs" },
        { name: "a", url: "https://x.example" },
      ]),
    ).toBe('hooks[1] "a": the name "a" is declared twice; names must be unique');
  });

  it.each([
    ["none of module, path, url and command", { name: "a" }, 'hooks[0] "a": give exactly one of module, path, url or command'],
    [
      "path and url",
      { name: "a", path: "a.mjs", url: "https://x.example" },
      'hooks[0] "a": give exactly one of module, path, url or command (it has path and url)',
    ],
    [
      "module and path",
      { name: "a", module: "acme", path: "a.mjs" },
      'hooks[0] "a": give exactly one of module, path, url or command (it has module and path)',
    ],
  ])("an entry with %s fails", (_title, entry, message) => {
    expect(failure([entry])).toBe(message);
  });

  it("an unknown key fails naming it", () => {
    expect(failure([{ name: "a", path: "a.mjs", timeout: 3 }])).toMatch(/^hooks\[0\] "a": .*\(timeout\)$/);
  });

  it("an entry that is not an object fails", () => {
    expect(failure(["a.mjs"])).toMatch(/^hooks\[0\]: /);
  });
});

describe("parseHookDeclaration: R3.1 where a local entry lives", () => {
  it("a relative path resolves against the config file's directory, never the cwd", () => {
    const cwd = vi.spyOn(process, "cwd").mockReturnValue("/srv/checkouts/octo-repo-15");
    const [entry] = parse([{ name: "a", path: "./hooks/a.mjs" }]);
    expect(entry).toMatchObject({ resolved: "/etc/the-loop/hooks/a.mjs" });
    expect(parse([{ name: "a", path: "../shared/a.ts" }])[0]).toMatchObject({ resolved: "/etc/shared/a.ts" });
    cwd.mockRestore();
  });

  it("an absolute path stays, ~ is the home directory", () => {
    expect(parse([{ name: "a", path: "/opt/hooks/a.js" }])[0]).toMatchObject({ resolved: "/opt/hooks/a.js" });
    expect(parse([{ name: "a", path: "~/hooks/a.mjs" }])[0]).toMatchObject({ resolved: "/home/op/hooks/a.mjs" });
  });

  it.each(["a.py", "a.cjs", "hooks/a", "a.json"])("a path to a %s file fails naming the extensions", (path) => {
    expect(failure([{ name: "a", path }])).toBe(`hooks[0] "a": path must name a .js, .mjs, .ts file (got ${path})`);
  });

  it.each(["./hooks.mjs", "/opt/hooks/index.js", "node:fs", "file:///x.mjs", "~/hooks", "acme/../evil", "@scope"])(
    "module %s is not a package name and fails",
    (module) => {
      expect(failure([{ name: "a", module }])).toMatch(/^hooks\[0\] "a": module must name an installed package .*use path for a file$/);
    },
  );

  it.each(["acme-hooks", "@acme/hooks", "@acme/hooks/lifecycle", "acme/dist/hooks.js"])("module %s is a package name", (module) => {
    expect(parse([{ name: "a", module }])[0]).toMatchObject({ kind: "module", resolved: module });
  });
});

describe("parseHookDeclaration: R3.2 options of each kind", () => {
  it("a local entry keeps executor and with", () => {
    const [entry] = parse([{ name: "a", path: "a.ts", executor: "Audit", with: { level: 2, tags: ["x"], nested: { on: true } } }]);
    expect(entry).toMatchObject({ executor: "Audit", options: { level: 2, tags: ["x"], nested: { on: true } } });
  });

  it("a remote entry keeps tokenEnv, headers and timeoutSeconds", () => {
    const [entry] = parse([{ name: "a", url: "https://x.example/rpc", tokenEnv: "AUDIT_TOKEN", headers: { "X-Team": "sec" }, timeoutSeconds: 2.5 }]);
    expect(entry).toMatchObject({ tokenEnv: "AUDIT_TOKEN", headers: { "X-Team": "sec" }, timeoutSeconds: 2.5 });
  });

  it.each([
    ["tokenEnv", { tokenEnv: "T" }],
    ["headers", { headers: { "X-A": "b" } }],
    ["timeoutSeconds", { timeoutSeconds: 3 }],
  ])("%s on a local entry fails", (key, extra) => {
    expect(failure([{ name: "a", path: "a.mjs", ...extra }])).toBe(`hooks[0] "a": ${key} applies to url entries only, not to a path`);
    expect(failure([{ name: "a", module: "acme", ...extra }])).toBe(`hooks[0] "a": ${key} applies to url entries only, not to a module`);
  });

  it.each([
    ["executor", { executor: "Audit" }],
    ["with", { with: { a: 1 } }],
  ])("%s on a remote entry fails", (key, extra) => {
    expect(failure([{ name: "a", url: "https://x.example", ...extra }])).toBe(`hooks[0] "a": ${key} applies to module and path entries only, not to a url`);
  });

  it.each([
    ["a tokenEnv that is not a variable name", { tokenEnv: "$TOKEN" }, /tokenEnv: an environment variable name/],
    ["a zero timeout", { timeoutSeconds: 0 }, /timeoutSeconds/],
    ["a negative timeout", { timeoutSeconds: -1 }, /timeoutSeconds/],
    ["a header that is not a string", { headers: { "X-A": 1 } }, /headers/],
  ])("%s fails", (_title, extra, message) => {
    expect(failure([{ name: "a", url: "https://x.example", ...extra }])).toMatch(message);
  });

  it("with must hold JSON", () => {
    expect(failure([{ name: "a", path: "a.mjs", with: { when: new Date() } }])).toMatch(/^hooks\[0\] "a": with/);
  });
});

describe("parseHookDeclaration: R3.3 on, required, enabled", () => {
  it("keeps on (without repeats), required and enabled", () => {
    const [entry] = parse([{ name: "a", path: "a.mjs", on: ["session_spawn", "work_item_start", "session_spawn"], required: true, enabled: false }]);
    expect(entry).toMatchObject({ on: ["session_spawn", "work_item_start"], required: true, enabled: false });
  });

  it.each(["session.spawned", "hooks.failed", "poll.cycle_started", "sessionSpawn", "work-item-start"])(
    "on naming %s, which is no hook point, fails listing the valid points (R1.3)",
    (name) => {
      expect(failure([{ name: "a", url: "https://x.example", on: [name] }])).toBe(
        `hooks[0] "a": on names "${name}", which is not a hook point; the points are work_item_start, session_spawn, session_spawned, waiting_for_input, input_received, phase_changed, work_item_complete`,
      );
    },
  );

  it("the points a declaration may name are the ones it is given", () => {
    const context = { ...CONTEXT, points: ["loop.started"] };
    expect(parse([{ name: "a", url: "https://x.example", on: ["loop.started"] }], context)[0]).toMatchObject({ on: ["loop.started"] });
    expect(() => parse([{ name: "a", url: "https://x.example", on: ["session_spawn"] }], context)).toThrow(/the points are loop\.started$/);
  });

  it.each([
    ["required", { required: "yes" }],
    ["enabled", { enabled: 0 }],
    ["on", { on: "session_spawn" }],
  ])("%s of the wrong type fails", (key, extra) => {
    expect(failure([{ name: "a", path: "a.mjs", ...extra }])).toMatch(new RegExp(`^hooks\\[0\\] "a": ${key}: `));
  });
});

describe("parseHookDeclaration: R4.3 transport and secrets", () => {
  it.each(["http://127.0.0.1:8080/rpc", "http://localhost:9000", "http://[::1]:9000/", "http://127.1.2.3/"])(
    "http:// to the loopback host of %s is allowed, with a token",
    (url) => {
      expect(parse([{ name: "a", url, tokenEnv: "T" }])[0]).toMatchObject({ kind: "url", tokenEnv: "T" });
    },
  );

  it("cleartext http:// to a host that is not loopback, with a tokenEnv, fails (abuse case 4)", () => {
    expect(failure([{ name: "audit", url: "http://hooks.example:8080/rpc", tokenEnv: "AUDIT_TOKEN" }])).toBe(
      `hooks[0] "audit": url http://hooks.example:8080 is plain http:// to a host that is not loopback, and a bearer token (tokenEnv) would travel in clear; use https://`,
    );
    expect(failure([{ name: "audit", url: "http://0.0.0.0/", tokenEnv: "AUDIT_TOKEN" }])).toMatch(/is plain http:\/\/ to a host that is not loopback/);
  });

  it("cleartext http:// to another host without a token is accepted (docs/hooks.md: prefer https://)", () => {
    expect(parse([{ name: "a", url: "http://10.0.0.5:8080/" }])[0]).toMatchObject({ kind: "url" });
  });

  it.each(["ftp://x.example/", "file:///tmp/x", "ws://localhost/"])("a url with scheme %s fails", (url) => {
    expect(failure([{ name: "a", url }])).toMatch(/url must be https:\/\//);
  });

  it("a url that does not parse fails", () => {
    expect(failure([{ name: "a", url: "not a url" }])).toBe('hooks[0] "a": url "not a url" is not a valid URL');
  });

  it("a url carrying credentials fails", () => {
    expect(failure([{ name: "a", url: "https://user:pass@x.example/" }])).toMatch(/must not carry credentials; name the token's variable in tokenEnv/);
  });

  it.each(["Authorization", "authorization", "Proxy-Authorization", "Cookie"])("a %s header fails: a secret belongs in tokenEnv", (header) => {
    expect(failure([{ name: "a", url: "https://x.example/", headers: { [header]: "Bearer abc" } }])).toBe(
      `hooks[0] "a": headers must not carry ${header}; put the token in an environment variable named by tokenEnv`,
    );
  });

  it("recognizes loopback hosts", () => {
    expect(["localhost", "127.0.0.1", "[::1]", "::1"].map(isLoopbackHost)).toEqual([true, true, true, true]);
    // A name under .localhost goes to the resolver, which may point it anywhere.
    expect(["example.com", "128.0.0.1", "localhost.example.com", "0.0.0.0", "::ffff:7f00:1", "a.localhost"].map(isLoopbackHost)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
