/**
 * Where the page draws a process graph (pure, table-tested): nodes in layers by their distance
 * from the start node, top to bottom; an edge forward is a curve down, an edge back (a loop, such
 * as changes requested → write again) a curve around the right-hand side.
 */

export interface LayoutInput {
  readonly start: string;
  readonly nodes: readonly { readonly id: string }[];
  readonly edges: readonly { readonly from: string; readonly to: string; readonly on: string }[];
}

export interface PlacedNode {
  readonly id: string;
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  readonly layer: number;
}

export interface PlacedEdge {
  readonly from: string;
  readonly to: string;
  readonly on: string;
  /** An SVG path. */
  readonly path: string;
  readonly labelX: number;
  readonly labelY: number;
  readonly back: boolean;
}

export interface Layout {
  readonly width: number;
  readonly height: number;
  readonly nodes: readonly PlacedNode[];
  readonly edges: readonly PlacedEdge[];
}

const NODE_HEIGHT = 34;
const LAYER_GAP = 64;
const NODE_GAP = 28;
const PAD = 16;
const CHAR = 7.5;
const LOOP_GAP = 26;
/** A label character's width at the page's 10.5 px monospace. */
const LABEL_CHAR = 6.5;

export function nodeWidth(id: string): number {
  return Math.max(84, Math.round(id.length * CHAR + 28));
}

/** Each node's layer: its distance from the start node; a node the start does not reach goes below the rest. */
export function layersOf(input: LayoutInput): Map<string, number> {
  const next = new Map<string, string[]>();
  for (const edge of input.edges) next.set(edge.from, [...(next.get(edge.from) ?? []), edge.to]);
  const layer = new Map<string, number>();
  const known = new Set(input.nodes.map((node) => node.id));
  if (known.has(input.start)) layer.set(input.start, 0);
  const queue = known.has(input.start) ? [input.start] : [];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    for (const to of next.get(id) ?? []) {
      if (!known.has(to) || layer.has(to)) continue;
      layer.set(to, (layer.get(id) ?? 0) + 1);
      queue.push(to);
    }
  }
  const below = Math.max(-1, ...layer.values()) + 1;
  for (const node of input.nodes) if (!layer.has(node.id)) layer.set(node.id, below);
  return layer;
}

export function layoutGraph(input: LayoutInput): Layout {
  const layer = layersOf(input);
  const rows: string[][] = [];
  for (const node of input.nodes) {
    const at = layer.get(node.id) ?? 0;
    (rows[at] ??= []).push(node.id);
  }
  const rowWidth = (row: readonly string[]): number => row.reduce((sum, id) => sum + nodeWidth(id), 0) + NODE_GAP * Math.max(0, row.length - 1);
  const widest = Math.max(0, ...rows.map((row) => rowWidth(row ?? [])));
  const placed = new Map<string, PlacedNode>();
  rows.forEach((row = [], index) => {
    let x = PAD + (widest - rowWidth(row)) / 2;
    for (const id of row) {
      const width = nodeWidth(id);
      placed.set(id, { id, x, y: PAD + index * (NODE_HEIGHT + LAYER_GAP), width, height: NODE_HEIGHT, layer: index });
      x += width + NODE_GAP;
    }
  });
  const right = PAD + widest;
  let loops = 0;
  const edges: PlacedEdge[] = [];
  for (const edge of input.edges) {
    const from = placed.get(edge.from);
    const to = placed.get(edge.to);
    if (from === undefined || to === undefined) continue;
    if (to.layer > from.layer) {
      const x1 = from.x + from.width / 2;
      const y1 = from.y + from.height;
      const x2 = to.x + to.width / 2;
      const y2 = to.y;
      const mid = (y1 + y2) / 2;
      edges.push({ ...edge, path: `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2 - 2}`, labelX: (x1 + x2) / 2 + 6, labelY: mid, back: false });
    } else {
      loops += 1;
      const bend = right + LOOP_GAP * loops;
      const x1 = from.x + from.width;
      const y1 = from.y + from.height / 2;
      const x2 = to.x + to.width;
      const y2 = to.y + to.height / 2;
      // The curve's outermost point is three quarters of the way to the bend: the label starts just past it.
      edges.push({
        ...edge,
        path: `M${x1},${y1} C${bend},${y1} ${bend},${y2} ${x2 + 2},${y2}`,
        labelX: x1 + (bend - x1) * 0.75 + 6,
        labelY: (y1 + y2) / 2,
        back: true,
      });
    }
  }
  const widestLabel = Math.max(0, ...edges.map((edge) => edge.labelX + edge.on.length * LABEL_CHAR));
  return {
    width: Math.ceil(Math.max(right + PAD, widestLabel + PAD)),
    height: Math.ceil(PAD * 2 + rows.length * NODE_HEIGHT + Math.max(0, rows.length - 1) * LAYER_GAP),
    nodes: [...placed.values()],
    edges,
  };
}
