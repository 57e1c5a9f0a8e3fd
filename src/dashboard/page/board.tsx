import { useMemo } from "preact/hooks";
import { api } from "./api.js";
import { LiveBadge } from "./common.js";
import { useLive, useNow } from "./live.js";
import { COLUMNS, ageOf, agentOf, budgetBar, byColumn, itemHref, startedAt } from "./model.js";
import type { Item } from "./model.js";

/** The board: every work item in its column, live. */
export function Board({ filter, onFilter }: { filter: string; onFilter: (text: string) => void }) {
  const live = useLive(api.items, "items", "backlog=0");
  const now = useNow();
  const items = live.data?.items;
  const columns = useMemo(() => byColumn(items ?? [], filter), [items, filter]);
  const total = items?.length ?? 0;
  const shown = COLUMNS.reduce((sum, column) => sum + columns[column.id].length, 0);
  return (
    <section class="board-view" aria-labelledby="board-title">
      <div class="toolbar">
        <h1 id="board-title" tabIndex={-1}>
          Board
        </h1>
        <label class="filter">
          <span class="visually-hidden">Filter the cards</span>
          <input
            id="board-filter"
            type="search"
            placeholder="Filter: ref, title, node, agent  ( / )"
            value={filter}
            onInput={(event) => onFilter((event.target as HTMLInputElement).value)}
          />
        </label>
        <LiveBadge state={live.stream} />
        <p class="count" aria-live="polite">
          {live.data === undefined ? "Loading…" : filter !== "" ? `${shown} of ${total} items` : `${total} item${total === 1 ? "" : "s"}`}
        </p>
      </div>
      {live.error !== undefined ? (
        <p class="error" role="alert">
          {live.error}
        </p>
      ) : null}
      {live.data !== undefined && live.data.problems.length > 0 ? (
        <details class="problems">
          <summary>{`${live.data.problems.length} record(s) could not be read`}</summary>
          <ul>
            {live.data.problems.map((problem) => (
              <li key={problem.file}>
                <code>{problem.file}</code>: {problem.message}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      <div class="columns">
        {COLUMNS.map((column) => (
          <section class={`column column-${column.id}`} key={column.id} aria-labelledby={`column-${column.id}`} data-column={column.id}>
            <header>
              <h2 id={`column-${column.id}`}>
                {column.title} <span class="badge">{columns[column.id].length}</span>
              </h2>
              <p class="hint">{column.hint}</p>
            </header>
            <ul class="cards">
              {columns[column.id].map((item) => (
                <Card key={item.ref} item={item} now={now} />
              ))}
            </ul>
          </section>
        ))}
      </div>
    </section>
  );
}

function Card({ item, now }: { item: Item; now: number }) {
  const agent = agentOf(item);
  const age = ageOf(startedAt(item), now);
  const bar = budgetBar(item.budget);
  const node = item.graph !== null ? item.graph.node : null;
  const question = item.session?.question ?? null;
  return (
    <li class="card" data-ref={item.ref}>
      <a class="card-link" href={itemHref(item.ref)}>
        <span class="card-ref">{item.ref}</span>
        {item.title ? <span class="card-title">{item.title}</span> : null}
        <span class="card-facts">
          {node !== null ? (
            <span class="chip chip-node" title={`graph ${item.graph?.name ?? ""}, ${item.graph?.status ?? ""}`}>
              {node}
              {item.graph?.status !== "running" ? ` · ${item.graph?.status ?? ""}` : ""}
            </span>
          ) : null}
          {agent !== null ? <span class="chip chip-agent">{agent}</span> : null}
          {item.queue !== null ? <span class="chip">{`#${item.queue.position} in queue`}</span> : null}
          {item.session !== null && item.session.status !== "active" ? <span class="chip chip-status">{item.session.status}</span> : null}
          {age !== null ? (
            <span class="age" title={item.lastActivity !== null ? `last activity ${item.lastActivity}` : undefined}>
              {age}
            </span>
          ) : null}
        </span>
        {question !== null ? <span class="card-question">{`Asks: ${question.text}`}</span> : null}
        {bar !== null ? (
          <span class={`budget budget-${bar.level}`} title={bar.label}>
            <span class="budget-track" aria-hidden="true">
              <span class="budget-fill" style={{ width: `${Math.round((bar.share ?? 0) * 100)}%` }} />
            </span>
            <span class="budget-label">{bar.label}</span>
          </span>
        ) : null}
      </a>
    </li>
  );
}
