// The probe test/integration/sandbox.test.ts runs inside the real bwrap, as a session's harness would run:
// it reports what it can see and do as one JSON document on stdout. `tty` mode instead reports the
// terminal it was given, into a file, for the tmux test.
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, openSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

const input = JSON.parse(process.argv[2] ?? "{}");

function attempt(action) {
  try {
    return { ok: true, value: action() };
  } catch (error) {
    return { ok: false, code: error?.code ?? String(error) };
  }
}

function tty() {
  const log = (line) => appendFileSync(input.log, `${line}\n`);
  const opened = attempt(() => openSync("/dev/tty", "r"));
  log(`devtty=${opened.ok ? "ok" : opened.code}`);
  process.on("SIGWINCH", () => {
    log(`winch=${process.stdout.columns}x${process.stdout.rows}`);
    process.exit(0);
  });
  log("ready");
  // Without a controlling terminal no resize arrives: the test ends the pane.
  setInterval(() => undefined, 1 << 30);
}

function tcp(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.end("ping\n"));
    socket.on("data", (chunk) => (answer += chunk));
    socket.on("end", () => resolve({ ok: true, value: answer }));
    socket.on("error", (error) => resolve({ ok: false, code: error.code ?? String(error) }));
  });
}

async function look() {
  const pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  const processes = pids.map((pid) => ({
    pid: Number(pid),
    argv: attempt(() => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean)).value ?? null,
  }));
  const environsWithSecret = pids.filter((pid) => attempt(() => readFileSync(`/proc/${pid}/environ`, "utf8").includes(input.secret)).value === true);
  const reads = Object.fromEntries(Object.entries(input.read).map(([name, path]) => [name, attempt(() => readFileSync(path, "utf8"))]));
  const lists = Object.fromEntries(Object.entries(input.list).map(([name, path]) => [name, attempt(() => readdirSync(path))]));
  const outsideTmpSeen = existsSync(input.outsideTmpFile);
  writeFileSync(input.insideTmpFile, "written inside");
  const writes = Object.fromEntries(Object.entries(input.write).map(([name, path]) => [name, attempt(() => appendFileSync(path, ""))]));
  const git = attempt(() => {
    const run = (...args) =>
      execFileSync("git", args, { cwd: input.worktree, stdio: ["ignore", "pipe", "pipe"] })
        .toString()
        .trim();
    writeFileSync(join(input.worktree, "from-inside.txt"), "made in the sandbox\n");
    run("add", "from-inside.txt");
    run("commit", "-q", "-m", "a commit made in the sandbox");
    return run("log", "-1", "--format=%s");
  });
  // The item's branch pushed to the remote the operator bound in; one not bound is not there to push to.
  const push = (remote) =>
    attempt(() => execFileSync("git", ["push", "-q", remote, "HEAD:refs/heads/item-1"], { cwd: input.worktree, stdio: ["ignore", "pipe", "pipe"] }).toString());
  const pushes = { bound: push(input.remote), unbound: push(input.unboundRemote) };
  const report = {
    env: { ...process.env },
    pid: process.pid,
    processes,
    environsWithSecret,
    daemonEnviron: attempt(() => readFileSync(`/proc/${input.daemonPid}/environ`, "utf8").includes(input.secret)),
    reads,
    lists,
    outsideTmpSeen,
    writes,
    git,
    pushes,
    tcp: await tcp(input.port),
  };
  process.stdout.write(JSON.stringify(report));
}

if (input.mode === "tty") tty();
else await look();
