// The harness of the sandboxed-session test: started by the daemon in a real session, it tries
// each door an agent would (the paths and secrets to try are in argv[3], written by the test), and
// writes what it found as one JSON document to argv[2] (in its own folder, the one place it may write). It asks its question and claims its node as an agent does,
// through `the-loop` on its PATH. Then it waits to be closed.
import { execFile } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";

const run = promisify(execFile);
const [, , reportFile, checksFile] = process.argv;
const checks = JSON.parse(readFileSync(checksFile, "utf8"));

function attempt(action) {
  try {
    return { ok: true, value: action() };
  } catch (error) {
    return { ok: false, code: error?.code ?? String(error) };
  }
}

async function theLoop(args) {
  try {
    const { stdout, stderr } = await run("the-loop", args, { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return { code: typeof error.code === "number" ? error.code : String(error.code), stdout: error.stdout ?? "", stderr: error.stderr ?? "" };
  }
}

const pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
const processes = pids.map((pid) => ({
  pid: Number(pid),
  argv: attempt(() => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean)).value ?? null,
}));
const environsWithSecret = pids.filter((pid) => {
  const environ = attempt(() => readFileSync(`/proc/${pid}/environ`, "utf8"));
  return environ.ok && checks.secrets.some((secret) => environ.value.includes(secret));
});
const reads = Object.fromEntries(Object.entries(checks.reads).map(([name, path]) => [name, attempt(() => readFileSync(path, "utf8"))]));
const lists = Object.fromEntries(Object.entries(checks.lists).map(([name, path]) => [name, attempt(() => readdirSync(path))]));

const report = {
  env: { PATH: process.env.PATH, THE_LOOP_SESSION_SOCKET: process.env.THE_LOOP_SESSION_SOCKET, THE_LOOP_CLI_CONFIG: process.env.THE_LOOP_CLI_CONFIG },
  processes,
  environsWithSecret,
  reads,
  lists,
  force: await theLoop(["graph", "force", checks.workItem, "--to", "review", "--reason", "the agent's own"]),
  start: await theLoop(["sessions", "start", "--work-item", checks.otherItem]),
  comment: await theLoop(["item", "comment", checks.workItem, checks.approve, "--as", "alice"]),
  ask: await theLoop(["ask", checks.question, "--json"]),
};
writeFileSync(checks.specFile, "# Spec\n\nwritten in the sandbox\n");
report.claim = await theLoop(["graph", "complete", "--json"]);
writeFileSync(reportFile, `${JSON.stringify(report)}\n`);
setInterval(() => undefined, 1 << 30);
