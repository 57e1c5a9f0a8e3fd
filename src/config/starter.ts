/**
 * The config `the-loop init` writes: every key a newcomer needs, each explained where it stands,
 * using the embedded local tracker so nothing needs a network or a credential. A test loads it
 * through the real loader, so it can never drift into something invalid.
 */
export function starterConfigText(project: string, login?: string): string {
  const authorized = login && /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(login) ? `[${JSON.stringify(login)}]` : "[]";
  return `# yaml-language-server: $schema=./cli-config.schema.json
#
# the-loop configuration. Every key is optional; what is left out takes its default.
# Reference of every key: docs/config.md. Check this file with: the-loop config validate
# See the effective values and every derived path with: the-loop config show
#
# Relative paths resolve against the project directory: the folder that holds .the-loop/.
version: 1

state:
  # Everything the-loop generates lives under this folder: session records, control records,
  # poll state, the event log, pidfiles, the local tracker's items and workspaces.
  root: .the-loop
  # The records are files under the root: embedded, nothing to set up. \`store: postgres\` keeps
  # them in a PostgreSQL database whose URL is in $THE_LOOP_STATE_URL (docs/scale.md).
  # store: file
  # daemonName: box-1   # with store: postgres, this daemon's name among those sharing it (default: the host's)

integrations:
  local:
    # The embedded local tracker keeps work items under <state.root>/tracker/, with no network
    # and no credentials. \`the-loop item new "title"\` creates local:${project}#1; a bare #1 on
    # the command line means local:${project}#1.
    project: ${project}
  # GitHub (docs/github.md): the token comes from $GH_TOKEN or $GITHUB_TOKEN (or \`gh auth token\`).
  # github:
  #   apiUrl: https://ghe.example.com/api/v3   # GitHub Enterprise only

routing:
  # Logins whose comments and labels the-loop acts on (exact match). Empty means nothing a
  # person does is acted on. On the local tracker your login is your OS user name; on GitHub,
  # list GitHub logins.
  authorizedUsers: ${authorized}
  # Which work items without a session are armed for one: never | always | labeled
  # (labeled = the item carries autoExecuteLabel).
  spawnOnUnmatched: labeled
  autoExecuteLabel: "the-loop: auto-execute"
  # The agent every session runs: claude, cursor, gemini, codex, or a harness declared below.
  defaultHarness: claude
  # Nobody is at a session's terminal: grant the tools the agent may use without asking
  # (docs/agents.md). the-loop marks each session's folder trusted in Claude Code's config
  # (routing.harnessTrust) so it never stops on the "Do you trust this folder?" dialog.
  # harnesses:
  #   claude: {args: [--allowedTools, "Bash(the-loop ask:*)", Edit, Write]}
  #   my-agent: {command: [my-agent, --task, "{prompt}"]}   # any agent CLI, argv form
  # A label may pick an item's harness among those named here (docs/agents.md); an operator's
  # start picks with \`the-loop sessions start --agent NAME\`:
  # harnessByLabel: {"agent: codex": codex, "agent: gemini": gemini}
  # Concurrency caps (docs/fleet.md): a start beyond one waits in a queue, in order, with a
  # comment giving its place, and starts by itself when a session closes. Unset: no cap.
  # limits:
  #   maxLiveSessions: 4
  #   perDaemon: 2                   # this daemon's own capacity (several daemons on one database: docs/scale.md)
  #   perHarness: {codex: 2}
  #   perRepository: {acme/api: 1}   # a repository, or a local project by its name
  #   priorityLabel: urgent          # a queued start carrying this label goes first
  #   perNode: {review: 2}           # runs at a graph node (its id) or phase at once; the next waits at its edge
  # Budgets per session (docs/fleet.md#budgets): model tokens as the agent CLI records them,
  # and wall-clock minutes. A warning at warnAt; at the limit the agent's turn is interrupted and
  # the item paused until \`the-loop sessions resume --work-item REF --budget +N\`. Unset: counted only.
  # budget:
  #   tokens: 2000000
  #   minutes: 240
  #   warnAt: 0.8
  # A harness that exits or is killed is started again within seconds, its conversation
  # resumed; after maxRestarts in a row its session is failed to start (docs/fleet.md#supervision):
  supervision:
    enabled: true                # false: a dead harness waits for the item's next event
    # maxRestarts: 3             # restarts in a row; backoffSeconds: 2, doubled after each
  # Each agent runs in a bubblewrap sandbox where bwrap works (docs/security.md): its folder,
  # its CLI's config and its own socket to the-loop, nothing else. Bind in what it also needs:
  # sandbox:
  #   mode: auto                                     # auto | bubblewrap | none
  #   bind: [~/.gitconfig, {source: ~/.config/push-token, mode: ro}]
  # The label only arms a work item: its session starts when an authorized person comments
  # the-loop:start-execution on it (or runs \`the-loop sessions start --work-item REF\`).
  control:
    enabled: true
    requireStartCommand: true    # false: the label alone starts a session
    keywords:                    # comment words the-loop acts on (whole token, any case)
      start: the-loop:start-execution
      stop: the-loop:stop-execution      # close the session; the item stays stopped until a start
      pause: the-loop:pause-execution    # hold the session; events are recorded, not delivered
      resume: the-loop:resume-execution
  # Each session's agent also reaches the-loop as an MCP server (\`the-loop mcp\`), with its four
  # tools (ask, graph_complete, graph_status, why) pre-approved and nothing else (docs/agents.md).
  mcp:
    enabled: true                # false: the agent reaches the-loop through its shell only
  # What reaches a session from its pull requests (docs/github.md#ci-failures): a failed check
  # on the head commit (once per commit and check, the job's log tail fenced as untrusted output)
  # and reviews requesting changes. After maxCiFixAttempts failures a marked comment asks a person.
  # \`the-loop item check '#1' --name test --failed --log FILE\` plays a CI failure locally.
  feedback:
    reactions: {ciFailed: deliver, changesRequested: deliver}   # deliver | ignore
    maxCiFixAttempts: 3
    # repositories:
    #   octo/repo: {reactions: {ciFailed: ignore}}

polling:
  # \`the-loop start\` runs the poller: it reads the local tracker's change feed and turns each
  # change into an event for the router. See docs/sessions.md.
  enabled: true
  intervalSeconds: 10
  sources:
    - provider: local
    # - provider: github          # three conditional listings per repository and cycle
    #   repos: [owner/repo]

# webhooks:
#   ghWebhook:                    # GitHub pushes deliveries here; see docs/github.md
#     enabled: true
#     port: 8787
#     secretEnv: THE_LOOP_GH_WEBHOOK_SECRET   # the variable holding the secret, never the secret

# graph:                         # process graphs: phases, claims checked by the daemon, approval gates (docs/graph.md)
#   enabled: true
#   closeAfterMinutes: 10         # a run's session is told the run ended, then closed this long after (0: at once, never: kept)

# notify:                        # tell a person when an item needs them (docs/notifications.md)
#   sinks:
#     - name: team
#       kind: slack                 # slack | discord | json
#       urlEnv: TEAM_SLACK_WEBHOOK  # the variable holding the webhook URL, never the URL
#       moments: [gate-waiting, question, blocked, failed-to-start]

# dashboard:                     # the operator's dashboard API, served by the daemon (docs/dashboard.md)
#   enabled: true                 # \`the-loop dashboard\` prints a one-time login URL
#   operator: alice               # who it acts as (one of routing.authorizedUsers); unset: read-only
#   # host: 127.0.0.1             # any other address needs tls: {certFile, keyFile} (or insecureAllowPlainHttp)

eventLog:
  # Every observable step is one JSON line in <state.root>/logs/events.jsonl;
  # read it with \`the-loop events\`.
  enabled: true
  # path: .the-loop/logs/events.jsonl   # set a path to keep the log elsewhere (used as written)
`;
}

/** Keeps generated state out of version control while the config itself can be committed. */
export const STATE_GITIGNORE = `# Generated by the-loop: everything in this folder is state, except the config and its schema.
*
!.gitignore
!cli-config.yaml
!cli-config.schema.json
`;

/** A local project name derived from a directory name, or "default" when nothing usable is left. */
export function projectNameFor(directoryName: string): string {
  const name = directoryName
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 63)
    .replace(/[-.]+$/, "");
  return name || "default";
}
