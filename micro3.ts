import { EventLog, scrubSecrets } from "/work/wt/remainders/dist/events/log.js";
import { rememberSecret, redactKnownSecrets } from "/work/wt/remainders/dist/secrets.js";
import { inboundFromGitHub } from "/work/wt/remainders/dist/ingress/github-events.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
rememberSecret("bench-webhook-secret-0123456789abcdef");
const log = new EventLog({ path: null, source: "daemon" });
const logOn = new EventLog({ path: join(mkdtempSync(join(tmpdir(), "m-")), "e.jsonl"), source: "daemon" });
function time(label: string, n: number, f: (i: number) => void) {
  for (let i = 0; i < 5000; i++) f(i);
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) { const t = performance.now(); for (let i = 0; i < n; i++) f(i); runs.push((performance.now() - t) * 1000 / n); }
  runs.sort((a, b) => a - b);
  console.log(label.padEnd(30), runs[0].toFixed(2), "µs (min of 5)");
}
time("scrubSecrets short", 100000, (i) => scrubSecrets(`bench-123-${i}`));
time("redactKnown short", 100000, (i) => redactKnownSecrets(`bench-123-${i}`));
time("toISOString", 100000, () => new Date().toISOString());
time("emit batched x20 /20", 5000, (i) => logOn.batch(() => { for (let k = 0; k < 20; k++) logOn.emit("webhook.received", { delivery_id: `bench-1-${i}`, github_event: "issue_comment", action: "created", bytes: 2048, verified: true }); }));
const text = "Please handle the empty case too. ".repeat(60);
const body = JSON.stringify({ action: "created", issue: { id: 1, node_id: "I_kwDOBench1", number: 42, title: "Parser crashes on empty input", body: "Steps", state: "open", labels: [{ name: "bug" }, { name: "the-loop: auto-execute" }], html_url: "https://github.com/octo/repo/issues/42", updated_at: "2025-01-01T00:00:00Z", user: { login: "alice" } }, comment: { id: 9001, node_id: "IC_bench", body: text, user: { login: "alice" }, html_url: "https://github.com/octo/repo/issues/42#issuecomment-9001", created_at: "2025-01-01T00:00:01Z" }, repository: { id: 7, name: "repo", full_name: "octo/repo", html_url: "https://github.com/octo/repo", owner: { login: "octo" } }, sender: { login: "alice" } });
const payload = JSON.parse(body);
time("JSON.parse", 20000, () => JSON.parse(body));
time("inboundFromGitHub", 20000, (i) => inboundFromGitHub("issue_comment", payload, { deliveryId: `d${i}`, source: "gh-webhook" }));
