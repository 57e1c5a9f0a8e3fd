import { describe, expect, it } from "vitest";
import { SandboxPlanError, planBubblewrap, type SandboxRequest, type SystemEntry } from "../../src/sandbox/plan.js";

const MERGED_USR: SystemEntry[] = [
  { kind: "dir", path: "/usr" },
  { kind: "dir", path: "/etc" },
  { kind: "symlink", path: "/bin", to: "usr/bin" },
  { kind: "symlink", path: "/lib", to: "usr/lib" },
];

function request(overrides: Partial<SandboxRequest> = {}): SandboxRequest {
  return {
    worktree: "/srv/loop/workspaces/octo-repo-15",
    gitDirs: ["/srv/loop/workspaces/clones/octo-repo/.git"],
    home: "/home/op",
    agentConfig: [{ source: "/home/op/.claude", target: "/home/op/.claude", mode: "rw" }],
    binds: [],
    env: { PATH: "/usr/bin", HOME: "/home/op" },
    argv: ["claude", "--session-id", "x"],
    cwd: "/srv/loop/workspaces/octo-repo-15",
    stateRoot: "/srv/loop",
    system: MERGED_USR,
    ...overrides,
  };
}

/** The consecutive runs of `argv` that start with `flag`, each `flag` and its `arity` operands. */
function occurrences(argv: readonly string[], flag: string, arity: number): string[][] {
  const end = argv.indexOf("--");
  const options = end < 0 ? argv : argv.slice(0, end);
  const found: string[][] = [];
  options.forEach((word, index) => {
    if (word === flag) found.push(options.slice(index + 1, index + 1 + arity));
  });
  return found;
}

function indexOfPair(argv: readonly string[], flag: string, operand: string): number {
  return argv.findIndex((word, index) => word === flag && argv[index + 1] === operand);
}

describe("planBubblewrap: each field and the flags it makes", () => {
  it("makes the namespaces, drops every capability and dies with its parent", () => {
    const argv = planBubblewrap(request());
    expect(argv[0]).toBe("bwrap");
    for (const flag of ["--die-with-parent", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session"]) {
      expect(argv, flag).toContain(flag);
    }
    expect(occurrences(argv, "--cap-drop", 1)).toEqual([["ALL"]]);
    expect(argv).not.toContain("--unshare-net");
    expect(argv).not.toContain("--share-net");
  });

  it.each([
    ["terminal: true keeps the pane as the controlling terminal", { terminal: true }, "--new-session", false],
    ["terminal: false gives the command a session of its own", { terminal: false }, "--new-session", true],
    ["denyNestedUserNamespaces: false leaves --disable-userns out (bwrap < 0.8)", { denyNestedUserNamespaces: false }, "--disable-userns", false],
  ] as const)("%s", (_name, overrides, flag, present) => {
    expect(planBubblewrap(request(overrides)).includes(flag)).toBe(present);
  });

  it("program names the bwrap to run", () => {
    expect(planBubblewrap(request({ program: "/opt/bwrap" }))[0]).toBe("/opt/bwrap");
  });

  it("system: folders read-only, links recreated as the same links, a file read-only", () => {
    const argv = planBubblewrap(request({ system: [...MERGED_USR, { kind: "file", path: "/run/systemd/resolve/stub-resolv.conf" }] }));
    expect(occurrences(argv, "--ro-bind", 2)).toEqual(
      expect.arrayContaining([
        ["/usr", "/usr"],
        ["/etc", "/etc"],
        ["/run/systemd/resolve/stub-resolv.conf", "/run/systemd/resolve/stub-resolv.conf"],
      ]),
    );
    expect(occurrences(argv, "--symlink", 2)).toEqual([
      ["usr/bin", "/bin"],
      ["usr/lib", "/lib"],
    ]);
    expect(occurrences(argv, "--ro-bind", 2)).not.toContainEqual(["/", "/"]);
  });

  it("makes a new /proc, a minimal /dev and a private /tmp", () => {
    const argv = planBubblewrap(request());
    expect(occurrences(argv, "--proc", 1)).toEqual([["/proc"]]);
    expect(occurrences(argv, "--dev", 1)).toEqual([["/dev"]]);
    expect(occurrences(argv, "--tmpfs", 1)).toContainEqual(["/tmp"]);
  });

  it("home: an empty tmpfs, mounted before the agent config bound back into it", () => {
    const argv = planBubblewrap(request());
    expect(occurrences(argv, "--tmpfs", 1)).toContainEqual(["/home/op"]);
    expect(indexOfPair(argv, "--tmpfs", "/home/op")).toBeLessThan(indexOfPair(argv, "--bind-try", "/home/op/.claude"));
  });

  it("worktree and git dirs: bound read-write, the worktree's .git and what git runs from bound read-only over them", () => {
    const argv = planBubblewrap(request());
    const binds = occurrences(argv, "--bind", 2);
    expect(binds).toContainEqual(["/srv/loop/workspaces/octo-repo-15", "/srv/loop/workspaces/octo-repo-15"]);
    expect(binds).toContainEqual(["/srv/loop/workspaces/clones/octo-repo/.git", "/srv/loop/workspaces/clones/octo-repo/.git"]);
    const protectedPaths = occurrences(argv, "--ro-bind-try", 2).map(([source]) => source);
    const gitDir = "/srv/loop/workspaces/clones/octo-repo/.git";
    expect(protectedPaths).toEqual([
      "/srv/loop/workspaces/octo-repo-15/.git",
      `${gitDir}/config`,
      `${gitDir}/hooks`,
      `${gitDir}/commondir`,
      `${gitDir}/gitdir`,
    ]);
    // Over the writable bind, not under it.
    expect(indexOfPair(argv, "--ro-bind-try", `${gitDir}/config`)).toBeGreaterThan(indexOfPair(argv, "--bind", gitDir));
  });

  it("a clone's own .git, named as a git dir, stays writable (only its config and hooks are not)", () => {
    const worktree = "/srv/loop/workspaces/octo-repo-15";
    const argv = planBubblewrap(request({ gitDirs: [`${worktree}/.git`] }));
    expect(occurrences(argv, "--bind", 2)).toContainEqual([`${worktree}/.git`, `${worktree}/.git`]);
    expect(occurrences(argv, "--ro-bind-try", 2)).not.toContainEqual([`${worktree}/.git`, `${worktree}/.git`]);
    expect(occurrences(argv, "--ro-bind-try", 2)).toContainEqual([`${worktree}/.git/config`, `${worktree}/.git/config`]);
  });

  it.each([
    ["agent config rw: --bind-try (a missing file is skipped)", "agentConfig", "rw", "--bind-try"],
    ["agent config ro: --ro-bind-try", "agentConfig", "ro", "--ro-bind-try"],
    ["an operator's bind rw: --bind (a missing path fails the start)", "binds", "rw", "--bind"],
    ["an operator's bind ro: --ro-bind", "binds", "ro", "--ro-bind"],
  ] as const)("%s", (_name, field, mode, flag) => {
    const bind = { source: "/data/shared", target: "/home/op/shared", mode };
    const argv = planBubblewrap(request({ agentConfig: [], [field]: [bind] }));
    expect(occurrences(argv, flag, 2)).toContainEqual(["/data/shared", "/home/op/shared"]);
  });

  it("mounts a parent before what is bound inside it, whatever the request's order", () => {
    const argv = planBubblewrap(
      request({
        worktree: "/home/op/src/project",
        gitDirs: ["/home/op/src/project/.git"],
        cwd: "/home/op/src/project",
        binds: [
          { source: "/data/inner", target: "/home/op/src/project/vendor/inner", mode: "ro" },
          { source: "/data/outer", target: "/home/op/src/project/vendor", mode: "ro" },
        ],
      }),
    );
    const at = (flag: string, target: string): number => argv.findIndex((word, index) => word === flag && argv[index + 2] === target);
    expect(indexOfPair(argv, "--tmpfs", "/home/op")).toBeLessThan(at("--bind", "/home/op/src/project"));
    expect(at("--bind", "/home/op/src/project")).toBeLessThan(at("--ro-bind", "/home/op/src/project/vendor"));
    expect(at("--ro-bind", "/home/op/src/project/vendor")).toBeLessThan(at("--ro-bind", "/home/op/src/project/vendor/inner"));
  });

  it("env: clears the environment, then sets exactly each variable given, values as they are", () => {
    const env = { PATH: "/usr/bin", THE_LOOP_SESSION: "s1", MULTI: "line one\nline two", EMPTY: "" };
    const argv = planBubblewrap(request({ env }));
    const clear = argv.indexOf("--clearenv");
    expect(clear).toBeGreaterThan(0);
    const set = occurrences(argv, "--setenv", 2);
    expect(Object.fromEntries(set.map(([name, value]) => [name, value]))).toEqual(env);
    expect(argv.indexOf("--setenv")).toBeGreaterThan(clear);
  });

  it("env left out: nothing is cleared or set, the environment bwrap starts with passes as it is", () => {
    const { env: _env, ...rest } = request();
    const argv = planBubblewrap(rest);
    expect(argv).not.toContain("--clearenv");
    expect(argv).not.toContain("--setenv");
  });

  it("a worktree holding the state root: bound, the root masked by an empty tmpfs mounted after it", () => {
    const argv = planBubblewrap(
      request({ worktree: "/srv/project", cwd: "/srv/project", stateRoot: "/srv/project/.the-loop", gitDirs: ["/srv/project/.git"] }),
    );
    const worktree = indexOfPair(argv, "--bind", "/srv/project");
    const mask = indexOfPair(argv, "--tmpfs", "/srv/project/.the-loop");
    expect(worktree).toBeGreaterThan(0);
    expect(mask).toBeGreaterThan(worktree);
  });

  it("sessionSocket: the socket's folder, from inside the state root, bound read-write at its own target", () => {
    const argv = planBubblewrap(request({ sessionSocket: { source: "/srv/loop/run/sockets/ab12", target: "/run/the-loop/session" } }));
    expect(occurrences(argv, "--bind", 2)).toContainEqual(["/srv/loop/run/sockets/ab12", "/run/the-loop/session"]);
  });

  it("links: each made as a symbolic link inside the sandbox", () => {
    const argv = planBubblewrap(request({ links: [{ path: "/run/the-loop/bin/the-loop", to: "/opt/the-loop/bin/the-loop.js" }] }));
    expect(occurrences(argv, "--symlink", 2)).toContainEqual(["/opt/the-loop/bin/the-loop.js", "/run/the-loop/bin/the-loop"]);
  });

  it("hiddenFiles: /dev/null bound read-only over each, after the system they sit in", () => {
    const argv = planBubblewrap(request({ hiddenFiles: ["/etc/shadow", "/etc/ssh/ssh_host_ed25519_key"] }));
    expect(occurrences(argv, "--ro-bind", 2)).toContainEqual(["/dev/null", "/etc/shadow"]);
    expect(indexOfPair(argv, "--ro-bind", "/dev/null")).toBeGreaterThan(indexOfPair(argv, "--ro-bind", "/etc"));
  });

  it("argv and cwd: --chdir, then `--` and the command word for word, never a shell", () => {
    const argv = planBubblewrap(request({ argv: ["--looks-like-a-flag", "$(rm -rf ~)", "a b"] }));
    expect(occurrences(argv, "--chdir", 1)).toEqual([["/srv/loop/workspaces/octo-repo-15"]]);
    expect(argv.slice(argv.indexOf("--"))).toEqual(["--", "--looks-like-a-flag", "$(rm -rf ~)", "a b"]);
  });
});

describe("planBubblewrap refuses a request that would undo the sandbox", () => {
  const refusals: [string, Partial<SandboxRequest>, RegExp][] = [
    ["a relative worktree", { worktree: "workspaces/x" }, /worktree: .* not an absolute path/],
    ["a relative git dir", { gitDirs: [".git"] }, /gitDirs\[0\]: .* not an absolute path/],
    ["a relative home", { home: "~" }, /home: .* not an absolute path/],
    ["a relative cwd", { cwd: "." }, /cwd: .* not an absolute path/],
    ["a relative bind source", { binds: [{ source: "data", target: "/data", mode: "ro" }] }, /binds\[0\]\.source/],
    ["a relative bind target", { binds: [{ source: "/data", target: "data", mode: "ro" }] }, /binds\[0\]\.target/],
    ["a path with a NUL byte", { worktree: "/srv/loop/workspaces/a\0b" }, /worktree: the path holds a NUL byte/],
    ["a path with a newline", { binds: [{ source: "/data\n--bind", target: "/data", mode: "ro" }] }, /binds\[0\]\.source: the path holds a line break/],
    [
      "a path with ..",
      { binds: [{ source: "/srv/loop/workspaces/../tracker", target: "/t", mode: "ro" }] },
      /not written plainly \(write \/srv\/loop\/tracker\)/,
    ],
    ["a path with a trailing slash", { home: "/home/op/" }, /home: .* not written plainly/],
    ["a bind inside the state root", { binds: [{ source: "/srv/loop/tracker", target: "/tracker", mode: "ro" }] }, /binds\[0\]: .* inside the state root/],
    ["a bind of the state root", { binds: [{ source: "/srv/loop", target: "/loop", mode: "ro" }] }, /binds\[0\]: \/srv\/loop is the state root/],
    ["a bind above the state root", { binds: [{ source: "/srv", target: "/srv", mode: "ro" }] }, /binds\[0\]: \/srv contains the state root/],
    ["a bind of /", { binds: [{ source: "/", target: "/host", mode: "ro" }] }, /binds\[0\]: \/ contains the state root/],
    [
      "agent config inside the state root",
      { agentConfig: [{ source: "/srv/loop/sessions", target: "/home/op/.claude", mode: "rw" }] },
      /agentConfig\[0\]: .* inside the state root/,
    ],
    ["a worktree that is the state root", { worktree: "/srv/loop", cwd: "/srv/loop" }, /worktree: \/srv\/loop is the state root/],
    [
      "a session socket folder above the state root",
      { sessionSocket: { source: "/srv", target: "/run/s" } },
      /sessionSocket.source: \/srv contains the state root/,
    ],
    ["a link with an empty target", { links: [{ path: "/run/x", to: "" }] }, /links\[0\]: the link's target is empty/],
    ["a relative link path", { links: [{ path: "run/x", to: "/a" }] }, /links\[0\]\.path: .* not an absolute path/],
    ["a git dir above the state root", { gitDirs: ["/srv"] }, /gitDirs\[0\]: \/srv contains the state root/],
    ["a bind of the home", { binds: [{ source: "/home/op", target: "/op", mode: "ro" }] }, /binds\[0\]: \/home\/op is the home/],
    ["a bind above the home", { binds: [{ source: "/home", target: "/home", mode: "ro" }] }, /binds\[0\]: \/home contains the home/],
    ["a worktree above the home", { worktree: "/home", cwd: "/home" }, /worktree: \/home contains the home/],
    [
      "two binds on one target",
      {
        binds: [
          { source: "/a", target: "/data", mode: "ro" },
          { source: "/b", target: "/data", mode: "rw" },
        ],
      },
      /binds\[1\]: \/data is already the target of binds\[0\]/,
    ],
    [
      "a bind on the worktree's target",
      { binds: [{ source: "/a", target: "/srv/loop/workspaces/octo-repo-15", mode: "ro" }] },
      /already the target of worktree/,
    ],
    ["a bind on a system path", { binds: [{ source: "/a", target: "/usr", mode: "ro" }] }, /\/usr is already the target of the system's \/usr/],
    ["a bind on /tmp", { binds: [{ source: "/a", target: "/tmp", mode: "ro" }] }, /already the target of the private \/tmp/],
    ["a bind on the home", { binds: [{ source: "/a", target: "/home/op", mode: "ro" }] }, /already the target of home/],
    ["a bind inside /proc", { binds: [{ source: "/a", target: "/proc/1", mode: "ro" }] }, /inside \/proc, which the sandbox makes itself/],
    ["a git dir that repeats the worktree", { gitDirs: ["/srv/loop/workspaces/octo-repo-15"] }, /gitDirs\[0\]: .* already the target of worktree/],
    ["a cwd outside everything bound", { cwd: "/srv/elsewhere" }, /cwd: \/srv\/elsewhere is inside nothing bound/],
    ["an empty argv", { argv: [] }, /argv: the sandbox needs a command/],
    ["an argument with a NUL byte", { argv: ["claude", "a\0b"] }, /argv\[1\] holds a NUL byte/],
    ["a variable name with =", { env: { "A=B": "c" } }, /env: "A=B" is not a valid variable name/],
    ["a variable value with a NUL byte", { env: { A: "b\0c" } }, /env: A holds a NUL byte/],
    ["a bind mode other than ro or rw", { binds: [{ source: "/a", target: "/a", mode: "rx" as "ro" }] }, /binds\[0\]: mode must be "ro" or "rw"/],
    ["the whole file system as a system path", { system: [{ kind: "dir", path: "/" }] }, /system\[0\]: the whole file system/],
  ];

  it.each(refusals)("%s", (_name, overrides, message) => {
    expect(() => planBubblewrap(request(overrides))).toThrow(SandboxPlanError);
    expect(() => planBubblewrap(request(overrides))).toThrow(message);
  });

  it("allows the worktree and git dirs under the state root, where workspaces live by default", () => {
    expect(() => planBubblewrap(request())).not.toThrow();
  });
});
