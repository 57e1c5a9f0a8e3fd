import { describe, expect, it } from "vitest";
import { checkBubblewrap } from "../../src/sandbox/available.js";
import { hostSystem, type HostFs } from "../../src/sandbox/host.js";
import type { BoundedCommand, BoundedResult } from "../../src/subprocess/index.js";

function result(overrides: Partial<BoundedResult>): BoundedResult {
  return {
    exitCode: 0,
    signal: null,
    timedOut: false,
    aborted: false,
    stdout: "",
    stderr: "",
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 1,
    ...overrides,
  };
}

/** A runner answering by the first argument after the program, remembering each argv. */
function fakeRunner(answers: Record<string, Partial<BoundedResult>>): { run: (command: BoundedCommand) => Promise<BoundedResult>; calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    run: (command) => {
      calls.push([...command.argv]);
      return Promise.resolve(result(answers[command.argv[1] ?? ""] ?? {}));
    },
  };
}

describe("checkBubblewrap", () => {
  it("works: the version, and nested user namespaces can be denied", async () => {
    const runner = fakeRunner({ "--version": { stdout: "bubblewrap 0.8.0\n" } });
    expect(await checkBubblewrap({ run: runner.run, path: "/usr/bin" })).toEqual({
      available: true,
      program: "bwrap",
      version: "bubblewrap 0.8.0",
      denyNestedUserNamespaces: true,
    });
    expect(runner.calls[1]).toEqual(expect.arrayContaining(["--disable-userns", "--unshare-user", "--unshare-pid", "--cap-drop", "ALL", "true"]));
  });

  it("an older bwrap without --disable-userns still works, without that promise", async () => {
    const runner = fakeRunner({
      "--version": { stdout: "bubblewrap 0.6.1" },
      "--disable-userns": { exitCode: 1, stderr: "bwrap: Unknown option --disable-userns" },
    });
    expect(await checkBubblewrap({ run: runner.run })).toMatchObject({ available: true, denyNestedUserNamespaces: false });
    expect(runner.calls[2]).not.toContain("--disable-userns");
  });

  it("not installed: says so and how to install it", async () => {
    const runner = fakeRunner({ "--version": { exitCode: null, error: "command not found: bwrap (install it or put it on the PATH the command is given)" } });
    expect(await checkBubblewrap({ run: runner.run })).toEqual({
      available: false,
      reason: "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)",
    });
  });

  it("user namespaces refused: the kernel's message as bwrap says it, and what to change", async () => {
    const said = "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)";
    const runner = fakeRunner({ "--version": { stdout: "bubblewrap 0.8.0" }, "--disable-userns": { exitCode: 1, stderr: said } });
    const check = await checkBubblewrap({ run: runner.run });
    expect(check.available).toBe(false);
    if (check.available) return;
    expect(check.reason).toContain(said);
    expect(check.reason).toContain("user namespaces");
    expect(check.reason).toContain("kernel.unprivileged_userns_clone");
  });

  it("a probe past its deadline is a reason, not a hang", async () => {
    const runner = fakeRunner({ "--version": { stdout: "bubblewrap 0.8.0" }, "--disable-userns": { exitCode: null, signal: "SIGKILL", timedOut: true } });
    expect(await checkBubblewrap({ run: runner.run, timeoutMs: 50 })).toEqual({
      available: false,
      reason: "bwrap did not finish a sandbox of `true` within 50 ms",
    });
  });
});

describe("hostSystem", () => {
  type Kind = "dir" | "file" | { link: string };
  function fakeFs(entries: Record<string, Kind>, real: Record<string, string> = {}): HostFs {
    return {
      lstat: (path) => {
        const kind = entries[path];
        if (kind === undefined) return undefined;
        return { isSymbolicLink: () => typeof kind === "object", isDirectory: () => kind === "dir", isFile: () => kind === "file" };
      },
      readlink: (path) => {
        const kind = entries[path];
        if (typeof kind !== "object") throw new Error(`not a link: ${path}`);
        return kind.link;
      },
      realpath: (path) => real[path] ?? path,
    };
  }

  it("merged /usr: /bin and the /lib folders are recreated as the links they are; missing ones are left out", () => {
    const fs = fakeFs({
      "/usr": "dir",
      "/etc": "dir",
      "/bin": { link: "usr/bin" },
      "/sbin": { link: "usr/sbin" },
      "/lib": { link: "usr/lib" },
      "/lib64": { link: "usr/lib64" },
      "/etc/resolv.conf": "file",
    });
    expect(hostSystem(fs)).toEqual([
      { kind: "dir", path: "/usr" },
      { kind: "dir", path: "/etc" },
      { kind: "symlink", path: "/bin", to: "usr/bin" },
      { kind: "symlink", path: "/sbin", to: "usr/sbin" },
      { kind: "symlink", path: "/lib", to: "usr/lib" },
      { kind: "symlink", path: "/lib64", to: "usr/lib64" },
    ]);
  });

  it("a split /usr: /bin and /lib are folders bound as they are", () => {
    expect(hostSystem(fakeFs({ "/usr": "dir", "/etc": "dir", "/bin": "dir", "/lib": "dir" }))).toEqual([
      { kind: "dir", path: "/usr" },
      { kind: "dir", path: "/etc" },
      { kind: "dir", path: "/bin" },
      { kind: "dir", path: "/lib" },
    ]);
  });

  it("an /etc/resolv.conf that leads out of /etc brings the file it leads to", () => {
    const stub = "/run/systemd/resolve/stub-resolv.conf";
    const fs = fakeFs({ "/usr": "dir", "/etc": "dir", "/etc/resolv.conf": { link: "../run/systemd/resolve/stub-resolv.conf" } }, { "/etc/resolv.conf": stub });
    expect(hostSystem(fs)).toContainEqual({ kind: "file", path: stub });
  });
});
