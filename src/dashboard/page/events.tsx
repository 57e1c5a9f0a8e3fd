import { useState } from "preact/hooks";
import { api } from "./api.js";
import { LiveBadge, Time } from "./common.js";
import { useLive } from "./live.js";
import { eventDetails, eventsHref, itemHref } from "./model.js";

const LEVELS = ["debug", "info", "warning", "error"] as const;

/** The event log with `the-loop events`' filters, following live. */
export function EventsView({ query }: { query: URLSearchParams }) {
  const key = query.toString();
  const [types, setTypes] = useState(query.getAll("type").join(" "));
  const [workItem, setWorkItem] = useState(query.get("work_item") ?? "");
  const [source, setSource] = useState(query.get("source") ?? "");
  const [level, setLevel] = useState(query.get("level") ?? "info");
  const [since, setSince] = useState(query.get("since") ?? "");
  const [limit, setLimit] = useState(query.get("limit") ?? "200");
  const [follow, setFollow] = useState(query.get("follow") !== "0");
  const apiQuery = new URLSearchParams(query);
  apiQuery.delete("follow");
  const streamQuery = new URLSearchParams(apiQuery);
  streamQuery.delete("limit");
  streamQuery.delete("since");
  streamQuery.set("backlog", "0");
  const live = useLive(() => api.events(apiQuery), `events:${key}`, follow ? streamQuery.toString() : null);

  const apply = (event: Event): void => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const type of types.split(/[\s,]+/).filter(Boolean)) next.append("type", type);
    if (workItem.trim() !== "") next.set("work_item", workItem.trim());
    if (source.trim() !== "") next.set("source", source.trim());
    if (level !== "info") next.set("level", level);
    if (since.trim() !== "") next.set("since", since.trim());
    if (limit.trim() !== "" && limit.trim() !== "200") next.set("limit", limit.trim());
    if (!follow) next.set("follow", "0");
    window.location.hash = eventsHref(next);
  };
  const events = live.data?.events ?? [];
  return (
    <section class="events-view" aria-labelledby="events-title">
      <div class="toolbar">
        <h1 id="events-title" tabIndex={-1}>
          Events
        </h1>
        {follow ? <LiveBadge state={live.stream} /> : <span class="live">paused</span>}
        <p class="count">
          {live.data === undefined ? "Loading…" : `${events.length} event${events.length === 1 ? "" : "s"}${live.data.complete ? "" : " (the log is longer)"}`}
        </p>
      </div>
      <form class="filters" onSubmit={apply} aria-label="Filters, as the-loop events takes them">
        <label>
          <span>Type (globs)</span>
          <input value={types} placeholder="graph.* session.spawned" onInput={(e) => setTypes((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <span>Work item</span>
          <input value={workItem} placeholder="local:demo#1" onInput={(e) => setWorkItem((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <span>Source</span>
          <input value={source} placeholder="daemon" onInput={(e) => setSource((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <span>Level (at least)</span>
          <select value={level} onChange={(e) => setLevel((e.target as HTMLSelectElement).value)}>
            {LEVELS.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span>Since</span>
          <input value={since} placeholder="15m, or an ISO time" onInput={(e) => setSince((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <span>Limit</span>
          <input value={limit} inputMode="numeric" onInput={(e) => setLimit((e.target as HTMLInputElement).value)} />
        </label>
        <label class="check">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} />
          <span>Follow live</span>
        </label>
        <button type="submit">Apply</button>
      </form>
      {live.error !== undefined ? (
        <p class="error" role="alert">
          {live.error}
        </p>
      ) : null}
      <div class="table-scroll">
        <table class="events">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Level</th>
              <th scope="col">Event</th>
              <th scope="col">Work item</th>
              <th scope="col">Source</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {events.map((record, index) => {
              const ref = typeof record.work_item === "string" ? record.work_item : null;
              return (
                <tr key={`${record.ts}-${record.event}-${index}`} class={`level-${record.level}`}>
                  <td>
                    <Time iso={record.ts} />
                  </td>
                  <td>{record.level}</td>
                  <td>
                    <code>{record.event}</code>
                  </td>
                  <td>{ref !== null ? <a href={itemHref(ref)}>{ref}</a> : null}</td>
                  <td>{record.source}</td>
                  <td class="details">{eventDetails(record)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
