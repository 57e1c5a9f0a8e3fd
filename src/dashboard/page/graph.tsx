import { useMemo } from "preact/hooks";
import { layoutGraph } from "./graph-layout.js";
import type { GraphAnswer } from "./model.js";

/** The item's process graph, drawn, with the node its run is at marked. */
export function GraphView({ answer, error }: { answer: GraphAnswer | undefined; error?: string | undefined }) {
  const graph = answer?.graph ?? null;
  const run = answer?.run ?? null;
  const layout = useMemo(() => (graph !== null ? layoutGraph(graph) : null), [graph]);
  return (
    <section class="panel graph-panel" aria-labelledby="graph-title">
      <header class="panel-header">
        <h2 id="graph-title">Graph</h2>
        {run !== null ? (
          <span
            class={`chip chip-run chip-run-${run.status}`}
          >{`${run.graph} · at ${run.node} · ${run.status}${run.generation > 1 ? ` · round ${run.generation}` : ""}`}</span>
        ) : null}
      </header>
      {error !== undefined ? <p class="error">{`The graph could not be read: ${error}`}</p> : null}
      {answer === undefined && error === undefined ? <p class="hint">Loading…</p> : null}
      {answer !== undefined && run === null ? <p class="hint">No graph run for this item: it runs without a process graph.</p> : null}
      {run !== null && run.reason !== null ? <p class="run-reason">{run.reason}</p> : null}
      {graph !== null && layout !== null ? (
        <div class="graph-scroll">
          <svg
            class="graph"
            width={layout.width}
            height={layout.height}
            viewBox={`0 0 ${layout.width} ${layout.height}`}
            role="img"
            aria-label={`Graph ${graph.name}${run !== null ? `, at ${run.node}` : ""}`}
          >
            <defs>
              <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                <path d="M0,0 L10,5 L0,10 z" class="arrow-head" />
              </marker>
            </defs>
            {layout.edges.map((edge) => (
              <g class={`edge${edge.back ? " edge-back" : ""}`} key={`${edge.from}-${edge.to}-${edge.on}`}>
                <path d={edge.path} marker-end="url(#arrow)" />
                <text x={edge.labelX} y={edge.labelY} text-anchor="start" dy="0.35em" class="edge-label">
                  {edge.on}
                </text>
              </g>
            ))}
            {layout.nodes.map((placed) => {
              const node = graph.nodes.find((candidate) => candidate.id === placed.id);
              const current = run !== null && run.node === placed.id;
              const classes = [
                "node",
                node?.actor === "human" ? "node-human" : "node-agent",
                node?.terminal ? "node-terminal" : "",
                current ? "node-current" : "",
              ];
              return (
                <g class={classes.filter(Boolean).join(" ")} key={placed.id} data-node={placed.id} aria-current={current ? "step" : undefined}>
                  <title>{`${placed.id}${node?.phase ? ` (${node.phase})` : ""}: ${node?.actor === "human" ? "a person decides" : "the agent works"}${node?.description ? ` — ${node.description}` : ""}`}</title>
                  <rect x={placed.x} y={placed.y} width={placed.width} height={placed.height} rx={node?.terminal ? 17 : 6} />
                  <text x={placed.x + placed.width / 2} y={placed.y + placed.height / 2} dy="0.35em" text-anchor="middle">
                    {placed.id}
                  </text>
                </g>
              );
            })}
          </svg>
        </div>
      ) : null}
      {graph !== null ? (
        <p class="legend">
          <span class="legend-key legend-current" /> current node <span class="legend-key legend-human" /> a person decides{" "}
          <span class="legend-key legend-agent" /> the agent works
        </p>
      ) : null}
    </section>
  );
}
