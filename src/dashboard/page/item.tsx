import { useState } from "preact/hooks";
import { ApiError, api } from "./api.js";
import { LiveBadge, Time } from "./common.js";
import { GraphView } from "./graph.js";
import { useLive } from "./live.js";
import { ACTION_LABELS, actionBody, applicableActions, liveSession, safeHref, shownComment } from "./model.js";
import type { ActionName, Comment, GraphAnswer, Item, Me, Why } from "./model.js";
import { TerminalView } from "./terminal.js";

/** Everything the item view reads, in one go: one event stream per view, not one per panel. */
interface ItemData {
  readonly item: Item | undefined;
  readonly why: Why | undefined;
  readonly graph: GraphAnswer | undefined;
  readonly graphError: string | undefined;
  readonly itemError: string | undefined;
  readonly comments: Comment[] | undefined;
  readonly commentsError: string | undefined;
  readonly whyError: string | undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function readItem(ref: string): Promise<ItemData> {
  const [items, why, graph, comments] = await Promise.allSettled([api.items(), api.why(ref), api.graph(ref), api.comments(ref)]);
  // Logged out: the whole view says so, rather than each panel.
  for (const part of [items, why, graph, comments])
    if (part.status === "rejected" && part.reason instanceof ApiError && part.reason.status === 401) throw part.reason;
  return {
    item: items.status === "fulfilled" ? items.value.items.find((row) => row.ref === ref) : undefined,
    why: why.status === "fulfilled" ? why.value : undefined,
    whyError: why.status === "rejected" ? messageOf(why.reason) : undefined,
    itemError: items.status === "rejected" ? messageOf(items.reason) : undefined,
    graph: graph.status === "fulfilled" ? graph.value : undefined,
    graphError: graph.status === "rejected" ? messageOf(graph.reason) : undefined,
    comments: comments.status === "fulfilled" ? comments.value.comments : undefined,
    commentsError: comments.status === "rejected" ? messageOf(comments.reason) : undefined,
  };
}

export function ItemView({ refName, me }: { refName: string; me: Me | undefined }) {
  const live = useLive(() => readItem(refName), `item:${refName}`, new URLSearchParams({ work_item: refName, backlog: "0" }).toString());
  const data = live.data;
  const item = data?.item;
  const href = safeHref(item?.url);
  return (
    <article class="item-view" aria-labelledby="item-title">
      <div class="toolbar">
        <a class="back" href="#/">
          ← Board
        </a>
        <h1 id="item-title" tabIndex={-1}>
          <span class="item-ref">{refName}</span>
          {item?.title ? <span class="item-title">{item.title}</span> : null}
        </h1>
        {item !== undefined ? <span class={`chip chip-column column-chip-${item.column}`}>{item.column}</span> : null}
        {href !== null ? (
          <a class="external" href={href} target="_blank" rel="noreferrer noopener">
            Open on the tracker ↗
          </a>
        ) : null}
        <LiveBadge state={live.stream} />
      </div>
      {live.error !== undefined || data?.itemError !== undefined ? (
        <p class="error" role="alert">
          {live.error ?? data?.itemError}
        </p>
      ) : null}
      {data?.why !== undefined ? (
        <section class="verdict" aria-label="Where it stands">
          <p class="verdict-summary">{data.why.verdict.summary}</p>
          {data.why.verdict.next !== null ? <p class="verdict-next">{`Next: ${data.why.verdict.next}`}</p> : null}
          {data.why.verdict.lastRefusal !== null ? <p class="verdict-refusal">{`Last refusal: ${data.why.verdict.lastRefusal}`}</p> : null}
          {data.why.usage !== null ? (
            <p class="verdict-usage" data-testid="usage">
              {`Budget used so far: ${data.why.usage.text}`}
            </p>
          ) : null}
        </section>
      ) : null}
      {data !== undefined ? <Actions refName={refName} item={item} me={me} onDone={live.refresh} /> : null}
      <div class="item-grid">
        <div class="item-main">
          <TerminalView refName={refName} live={liveSession(item)} elsewhere={item?.runsOn?.here === false ? item.runsOn.host : undefined} />
          <Timeline why={data?.why} error={data?.whyError} />
        </div>
        <div class="item-side">
          <GraphView answer={data?.graph} error={data?.graphError} />
          <Comments comments={data?.comments} error={data?.commentsError} />
        </div>
      </div>
    </article>
  );
}

function Actions({ refName, item, me, onDone }: { refName: string; item: Item | undefined; me: Me | undefined; onDone: () => void }) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState<ActionName | null>(null);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const actions = applicableActions(item, me);
  const wantsText = actions.some((action) => ACTION_LABELS[action].text !== "none");
  const act = async (action: ActionName): Promise<void> => {
    setBusy(action);
    setOutcome(null);
    try {
      const answer = await api.act(refName, action, actionBody(action, text));
      const ok = answer.status >= 200 && answer.status < 300;
      setOutcome({ ok, text: describeOutcome(action, ok, answer.body) });
      if (ok) setText("");
    } catch (error) {
      setOutcome({ ok: false, text: messageOf(error) });
    } finally {
      setBusy(null);
      onDone();
    }
  };
  if (me?.readOnly) {
    return (
      <section class="actions actions-readonly" aria-label="Actions">
        <p>
          Read-only: this dashboard has no <code>dashboard.operator</code>, so it takes no action. Set one in the config to act from here.
        </p>
      </section>
    );
  }
  return (
    <section class="actions" aria-labelledby="actions-title">
      <h2 id="actions-title" class="visually-hidden">
        Actions
      </h2>
      {wantsText ? (
        <label class="action-text">
          <span>
            {actions.includes("answer") ? "Answer, or a reason for the gate" : "Reason"}
            {actions.includes("request-changes") ? " (needed to request changes)" : " (optional)"}
          </span>
          <textarea rows={2} value={text} onInput={(event) => setText((event.target as HTMLTextAreaElement).value)} />
        </label>
      ) : null}
      <div class="action-buttons">
        {actions.length === 0 ? <p class="hint">No action applies now.</p> : null}
        {actions.map((action) => {
          const spec = ACTION_LABELS[action];
          const missing = spec.text === "required" && text.trim() === "";
          return (
            <button
              type="button"
              key={action}
              class={`action action-${action}`}
              data-action={action}
              disabled={busy !== null || missing}
              title={missing ? `${spec.label} needs the text above` : undefined}
              onClick={() => void act(action)}
            >
              {busy === action ? `${spec.label}…` : spec.label}
            </button>
          );
        })}
        {me?.operator ? <span class="acting-as">{`as ${me.operator}`}</span> : null}
      </div>
      {outcome !== null ? (
        <p class={outcome.ok ? "outcome outcome-ok" : "outcome outcome-refused"} role="status">
          {outcome.text}
        </p>
      ) : null}
    </section>
  );
}

function describeOutcome(action: ActionName, ok: boolean, body: Record<string, unknown>): string {
  const label = ACTION_LABELS[action].label;
  const reason = typeof body.reason === "string" ? body.reason : typeof body.error === "string" ? body.error : undefined;
  if (!ok) return `${label} refused${reason !== undefined ? `: ${reason}` : ""}`;
  if ((action === "approve" || action === "request-changes") && typeof body.node === "string") return `${label}: the run moved to ${body.node}.`;
  if (typeof body.effect === "string") return `${label}: ${body.effect}.`;
  return `${label}: done.`;
}

function Timeline({ why, error }: { why: Why | undefined; error: string | undefined }) {
  return (
    <section class="panel timeline-panel" aria-labelledby="timeline-title">
      <header class="panel-header">
        <h2 id="timeline-title">Timeline</h2>
        <span class="hint">newest first</span>
      </header>
      {error !== undefined ? <p class="error">{error}</p> : null}
      {why === undefined && error === undefined ? <p class="hint">Loading…</p> : null}
      {why !== undefined && why.timeline.length === 0 ? <p class="hint">No event names this item yet.</p> : null}
      {why !== undefined ? (
        <ol class="timeline">
          {why.timeline.map((entry, index) => (
            <li key={`${entry.ts}-${entry.event}-${index}`} class={`level-${entry.level}`} data-event={entry.event}>
              <Time iso={entry.ts} />
              <span class="timeline-text">{entry.text}</span>
              <code class="timeline-event">{entry.event}</code>
            </li>
          ))}
        </ol>
      ) : null}
    </section>
  );
}

function Comments({ comments, error }: { comments: Comment[] | undefined; error: string | undefined }) {
  return (
    <section class="panel comments-panel" aria-labelledby="comments-title">
      <header class="panel-header">
        <h2 id="comments-title">Comments</h2>
        {comments !== undefined ? <span class="badge">{comments.length}</span> : null}
      </header>
      {error !== undefined ? <p class="hint">{`The comments could not be read: ${error}`}</p> : null}
      {comments !== undefined && comments.length === 0 ? <p class="hint">No comments.</p> : null}
      {comments !== undefined ? (
        <ol class="comments">
          {comments.map((comment) => {
            const link = safeHref(comment.url);
            return (
              <li key={comment.id} class={comment.fromTheLoop ? "comment comment-loop" : "comment"}>
                <header>
                  <strong class="comment-author">{comment.author}</strong>
                  {comment.fromTheLoop ? <span class="chip chip-loop">the-loop</span> : null}
                  {link !== null ? (
                    <a href={link} target="_blank" rel="noreferrer noopener">
                      <Time iso={comment.createdAt} />
                    </a>
                  ) : (
                    <Time iso={comment.createdAt} />
                  )}
                </header>
                <CommentBody comment={comment} />
              </li>
            );
          })}
        </ol>
      ) : null}
    </section>
  );
}

/** Text, never HTML: the body is the tracker's, and hostile. One of the-loop's shows its first line, the rest folded. */
function CommentBody({ comment }: { comment: Comment }) {
  const shown = shownComment(comment);
  if (shown.rest === "") return <pre class="comment-body">{shown.head}</pre>;
  return (
    <details class="comment-fold">
      <summary>
        <span class="comment-body">{shown.head}</span>
      </summary>
      <pre class="comment-body">{shown.rest}</pre>
    </details>
  );
}
