// The grammar's automaton as a picture: the subset of Graphviz's DOT language that
// `typeset grammar compile --dot` writes, parsed, laid out and drawn as SVG in the page.
//
//   parseDot(text)        -> { attributes, nodes: Map(id -> {id, attributes, cluster}),
//                              edges: [{from, to, attributes}], clusters: [{id, attributes, nodes}] }
//   layoutGraph(graph)    -> { width, height, clusters, nodes, edges } in pixels
//   drawAutomaton(graph, svgElement)
//
// The layout is a small layered one (rankdir=LR): each cluster (one grammar rule) on its own
// band, its states in columns by their longest distance from the rule's first state (edges
// that go back are drawn as arcs under the band), ordered within a column by the mean row of
// their predecessors. Exact enough to read a rule's automaton; Graphviz's `dot` remains the
// reference for print.
"use strict";

const Automaton = (() => {
  // MARK: Parsing

  function tokenize(text) {
    const tokens = [];
    let index = 0;
    while (index < text.length) {
      const character = text[index];
      if (/\s/.test(character)) { index += 1; continue; }
      if (character === "/" && text[index + 1] === "/") {
        while (index < text.length && text[index] !== "\n") index += 1;
        continue;
      }
      if (character === "/" && text[index + 1] === "*") {
        const end = text.indexOf("*/", index + 2);
        index = end < 0 ? text.length : end + 2;
        continue;
      }
      if (character === "-" && text[index + 1] === ">") { tokens.push({ kind: "->" }); index += 2; continue; }
      if ("{}[];,=".includes(character)) { tokens.push({ kind: character }); index += 1; continue; }
      if (character === '"') {
        let value = "";
        index += 1;
        while (index < text.length && text[index] !== '"') {
          if (text[index] === "\\" && index + 1 < text.length) {
            const escaped = text[index + 1];
            value += escaped === "n" ? "\n" : escaped === "l" || escaped === "r" ? "\n" : escaped;
            index += 2;
          } else {
            value += text[index];
            index += 1;
          }
        }
        if (index >= text.length) throw new Error("DOT: a string is not closed");
        index += 1;
        tokens.push({ kind: "id", value });
        continue;
      }
      // DOT's bare IDs: a name (letters, digits, underscores, not starting with a digit) or a
      // number, so that `a->b` reads as two IDs and an arrow.
      const match = /^(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))/
        .exec(text.slice(index, index + 256));
      if (!match) throw new Error(`DOT: unexpected '${character}' at offset ${index}`);
      tokens.push({ kind: "id", value: match[0] });
      index += match[0].length;
    }
    return tokens;
  }

  function parseDot(text) {
    const tokens = tokenize(text);
    let position = 0;
    const end = { kind: "the end" };
    const peek = () => tokens[position] || end;
    const take = (kind) => {
      const token = tokens[position];
      if (!token || (kind && token.kind !== kind)) {
        throw new Error(`DOT: expected ${kind} at token ${position}, found ${token ? token.kind : "the end"}`);
      }
      position += 1;
      return token;
    };
    const graph = { attributes: {}, nodes: new Map(), edges: [], clusters: [] };

    function attributeList() {
      const attributes = {};
      while (peek().kind === "[") {
        take("[");
        while (peek().kind !== "]" && peek() !== end) {
          const key = take("id").value;
          take("=");
          attributes[key] = take("id").value;
          if (peek().kind === "," || peek().kind === ";") take();
        }
        take("]");
      }
      return attributes;
    }

    function node(id, cluster) {
      if (!graph.nodes.has(id)) graph.nodes.set(id, { id, attributes: {}, cluster: null });
      const entry = graph.nodes.get(id);
      if (cluster && !entry.cluster) {
        entry.cluster = cluster.id;
        cluster.nodes.push(id);
      }
      return entry;
    }

    function statements(cluster) {
      while (peek().kind !== "}" && peek() !== end) {
        const token = peek();
        if (token.kind === ";") { take(); continue; }
        if (token.kind === "id" && token.value === "subgraph") {
          take();
          const name = peek().kind === "id" ? take().value : `anonymous${graph.clusters.length}`;
          const inner = { id: name, attributes: {}, nodes: [] };
          graph.clusters.push(inner);
          take("{");
          statements(inner);
          take("}");
          continue;
        }
        const first = take("id").value;
        if (["graph", "node", "edge"].includes(first) && peek().kind === "[") {
          attributeList();   // defaults: drawn in the page's own style
          continue;
        }
        if (peek().kind === "=") {
          take("=");
          const value = take("id").value;
          (cluster ? cluster.attributes : graph.attributes)[first] = value;
          continue;
        }
        const chain = [first];
        while (peek().kind === "->") {
          take("->");
          chain.push(take("id").value);
        }
        const attributes = attributeList();
        if (chain.length === 1) {
          Object.assign(node(first, cluster).attributes, attributes);
        } else {
          chain.forEach((id) => node(id, cluster));
          for (let index = 0; index + 1 < chain.length; index += 1) {
            graph.edges.push({ from: chain[index], to: chain[index + 1], attributes });
          }
        }
      }
    }

    const head = take("id").value;
    if (head === "strict") take("id");
    if (peek().kind === "id") take("id");
    take("{");
    statements(null);
    take("}");
    return graph;
  }

  // MARK: Layout

  const minimumColumnGap = 74;
  const rowGap = 62;
  const radius = 15;
  const bandPadding = 26;
  const bandGap = 22;

  function layoutGraph(graph) {
    // Columns wide enough for the longest line under a state (its mask's counts).
    let longestDetail = 0;
    for (const entry of graph.nodes.values()) {
      const lines = (entry.attributes.label || "").split("\n").slice(1);
      for (const line of lines) longestDetail = Math.max(longestDetail, line.length);
    }
    const columnGap = Math.max(minimumColumnGap, Math.round(longestDetail * 5.6 + 18));
    // Each cluster is a band; nodes outside every cluster (the start point) go before the
    // band of the first node they point to.
    const bands = graph.clusters.map((cluster) => ({ cluster, nodes: cluster.nodes.slice() }));
    const loose = [...graph.nodes.values()].filter((entry) => !entry.cluster).map((entry) => entry.id);
    const bandOf = new Map();
    bands.forEach((band, index) => band.nodes.forEach((id) => bandOf.set(id, index)));
    if (bands.length === 0) bands.push({ cluster: null, nodes: [] });
    const leading = new Map();   // band index -> loose nodes placed before its first column
    for (const id of loose) {
      const target = graph.edges.find((edge) => edge.from === id && bandOf.has(edge.to));
      const index = target ? bandOf.get(target.to) : 0;
      if (!target && !bands[0].cluster) bands[0].nodes.push(id);
      else (leading.get(index) || leading.set(index, []).get(index)).push(id);
    }

    const successors = new Map();
    const predecessors = new Map();
    for (const id of graph.nodes.keys()) { successors.set(id, []); predecessors.set(id, []); }
    for (const edge of graph.edges) {
      successors.get(edge.from).push(edge.to);
      predecessors.get(edge.to).push(edge.from);
    }

    const placed = new Map();   // id -> {x, y, column, row}
    const backEdges = new Set();
    const drawnBands = [];
    let top = 0;
    let width = 0;

    bands.forEach((band, bandIndex) => {
      const members = new Set(band.nodes);
      const before = leading.get(bandIndex) || [];
      // Back edges: found by a depth-first walk from the band's first node (then any node not
      // reached), without recursion (a rule may have thousands of states).
      const visiting = new Set();
      const done = new Set();
      for (const root of band.nodes) {
        if (done.has(root)) continue;
        const stack = [[root, 0]];
        visiting.add(root);
        while (stack.length) {
          const frame = stack[stack.length - 1];
          const [id, next] = frame;
          const targets = successors.get(id).filter((target) => members.has(target));
          if (next < targets.length) {
            frame[1] += 1;
            const target = targets[next];
            if (visiting.has(target)) backEdges.add(`${id}\u0000${target}`);
            else if (!done.has(target)) { visiting.add(target); stack.push([target, 0]); }
          } else {
            visiting.delete(id);
            done.add(id);
            stack.pop();
          }
        }
      }
      // Columns: the longest forward path from a node with no forward predecessor.
      const column = new Map();
      const forwardIn = new Map(band.nodes.map((id) => [id, 0]));
      for (const id of band.nodes) {
        for (const target of successors.get(id)) {
          if (members.has(target) && !backEdges.has(`${id}\u0000${target}`) && target !== id) forwardIn.set(target, forwardIn.get(target) + 1);
        }
      }
      const queue = band.nodes.filter((id) => forwardIn.get(id) === 0);
      queue.forEach((id) => column.set(id, 0));
      for (let head = 0; head < queue.length; head += 1) {
        const id = queue[head];
        for (const target of successors.get(id)) {
          if (!members.has(target) || target === id || backEdges.has(`${id}\u0000${target}`)) continue;
          column.set(target, Math.max(column.get(target) || 0, column.get(id) + 1));
          forwardIn.set(target, forwardIn.get(target) - 1);
          if (forwardIn.get(target) === 0) queue.push(target);
        }
      }
      const offset = before.length ? 1 : 0;
      const columns = [];
      for (const id of band.nodes) {
        const index = (column.get(id) || 0) + offset;
        (columns[index] = columns[index] || []).push(id);
      }
      if (offset) columns[0] = before.slice();
      // Rows: a few sweeps ordering each column by its predecessors' mean row.
      const row = new Map();
      columns.forEach((ids) => ids.forEach((id, index) => row.set(id, index)));
      for (let sweep = 0; sweep < 4; sweep += 1) {
        for (let index = 1; index < columns.length; index += 1) {
          const ids = columns[index] || [];
          const weight = (id) => {
            const rows = predecessors.get(id).filter((from) => row.has(from) && from !== id).map((from) => row.get(from));
            return rows.length ? rows.reduce((sum, value) => sum + value, 0) / rows.length : row.get(id);
          };
          const keyed = ids.map((id) => [weight(id), row.get(id), id]);
          keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
          columns[index] = keyed.map((entry) => entry[2]);
          columns[index].forEach((id, position) => row.set(id, position));
        }
      }
      const rows = Math.max(1, ...columns.map((ids) => (ids ? ids.length : 0)));
      const label = band.cluster ? band.cluster.attributes.label || band.cluster.id : "";
      const hasBackEdges = band.nodes.some((id) => successors.get(id).some((target) => backEdges.has(`${id}\u0000${target}`)));
      const bandTop = top;
      const firstRowY = bandTop + bandPadding + 18;
      columns.forEach((ids, index) => {
        (ids || []).forEach((id, position) => {
          const rowsHere = ids.length;
          const y = firstRowY + (position + (rows - rowsHere) / 2) * rowGap;
          placed.set(id, { x: 40 + index * columnGap, y, band: bandIndex });
        });
      });
      const bandWidth = 40 + Math.max(0, columns.length - 1) * columnGap + 60;
      const bandHeight = bandPadding + 18 + (rows - 1) * rowGap + 40 + (hasBackEdges ? 34 : 0) + bandPadding / 2;
      drawnBands.push({ label, x: 8, y: bandTop, width: bandWidth, height: bandHeight, isCluster: Boolean(band.cluster) });
      width = Math.max(width, bandWidth + 16);
      top += bandHeight + bandGap;
    });

    const nodes = [...graph.nodes.values()].filter((entry) => placed.has(entry.id)).map((entry) => {
      const [name, ...details] = (entry.attributes.label !== undefined ? entry.attributes.label : entry.id).split("\n");
      return {
        id: entry.id, ...placed.get(entry.id), name, details,
        shape: entry.attributes.shape || "circle",
      };
    });
    const edges = graph.edges.filter((edge) => placed.has(edge.from) && placed.has(edge.to)).map((edge) => ({
      from: placed.get(edge.from), to: placed.get(edge.to), fromId: edge.from, toId: edge.to,
      label: edge.attributes.label || "",
      dashed: edge.attributes.style === "dashed",
      color: edge.attributes.color || "",
      isBack: backEdges.has(`${edge.from}\u0000${edge.to}`),
      fanOut: successors.get(edge.from).length,
      bandBottom: drawnBands[placed.get(edge.from).band].y + drawnBands[placed.get(edge.from).band].height,
    }));
    return { width: Math.max(width, 200), height: Math.max(top - bandGap + 8, 60), columnGap, bands: drawnBands, nodes, edges };
  }

  // MARK: Drawing

  const svgNamespace = "http://www.w3.org/2000/svg";

  function element(name, attributes, text) {
    const made = document.createElementNS(svgNamespace, name);
    for (const [key, value] of Object.entries(attributes)) made.setAttribute(key, String(value));
    if (text !== undefined) made.textContent = text;
    return made;
  }

  function edgePath(edge, columnGap) {
    const { from, to } = edge;
    if (edge.fromId === edge.toId) {
      // A loop above the state.
      const x = from.x, y = from.y - radius;
      return { d: `M ${x - 7} ${y + 2} C ${x - 24} ${y - 34}, ${x + 24} ${y - 34}, ${x + 7} ${y + 2}`, labelX: x, labelY: y - 30 };
    }
    if (edge.isBack) {
      // An arc under the band, from the later state back to the earlier.
      const depth = Math.min(edge.bandBottom - 14, Math.max(from.y, to.y) + 30 + Math.abs(from.x - to.x) * 0.08);
      const d = `M ${from.x} ${from.y + radius} C ${from.x} ${depth}, ${to.x} ${depth}, ${to.x} ${to.y + radius}`;
      return { d, labelX: (from.x + to.x) / 2, labelY: depth - 4 };
    }
    const dx = to.x - from.x, dy = to.y - from.y;
    const length = Math.hypot(dx, dy) || 1;
    const startX = from.x + (dx / length) * radius, startY = from.y + (dy / length) * radius;
    const endX = to.x - (dx / length) * (radius + 2), endY = to.y - (dy / length) * (radius + 2);
    // The label sits where the edges leaving one state have drawn apart: nearer the target
    // when the state has many.
    const t = edge.fanOut > 2 ? 0.7 : 0.5;
    if (Math.abs(to.x - from.x) > columnGap * 1.5) {
      // Over several columns: bowed above the row, so as not to cross the states between.
      const lift = Math.min(46, 14 + Math.abs(dx) * 0.05);
      const controlX = (startX + endX) / 2, controlY = Math.min(startY, endY) - lift;
      const along = (a, b, c) => (1 - t) * (1 - t) * a + 2 * (1 - t) * t * b + t * t * c;
      return { d: `M ${startX} ${startY} Q ${controlX} ${controlY}, ${endX} ${endY}`, labelX: along(startX, controlX, endX), labelY: along(startY, controlY, endY) - 4 };
    }
    return { d: `M ${startX} ${startY} L ${endX} ${endY}`, labelX: startX + (endX - startX) * t, labelY: startY + (endY - startY) * t - 5 };
  }

  function drawAutomaton(graph, svg) {
    const layout = layoutGraph(graph);
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${layout.width} ${layout.height}`);
    svg.setAttribute("width", layout.width);
    svg.setAttribute("height", layout.height);
    const definitions = element("defs", {});
    for (const [name, color] of [["arrow", "#555"], ["arrow-call", "#2563eb"]]) {
      const marker = element("marker", { id: name, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
      marker.appendChild(element("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: color }));
      definitions.appendChild(marker);
    }
    svg.appendChild(definitions);
    for (const band of layout.bands) {
      if (!band.isCluster) continue;
      const group = element("g", { class: "rule" });
      group.appendChild(element("rect", { x: band.x, y: band.y, width: band.width, height: band.height, rx: 10, class: "rule-box" }));
      group.appendChild(element("text", { x: band.x + 12, y: band.y + 18, class: "rule-name" }, band.label));
      svg.appendChild(group);
    }
    for (const edge of layout.edges) {
      const { d, labelX, labelY } = edgePath(edge, layout.columnGap);
      const call = edge.dashed;
      const group = element("g", { class: call ? "edge call" : "edge" });
      group.appendChild(element("path", { d, class: "edge-line", "marker-end": `url(#${call ? "arrow-call" : "arrow"})` }));
      if (edge.label) {
        const shown = edge.label.length > 18 ? edge.label.slice(0, 17) + "…" : edge.label;
        const text = element("text", { x: labelX, y: labelY, class: "edge-label" }, shown);
        if (shown !== edge.label) text.appendChild(element("title", {}, edge.label));
        group.appendChild(text);
      }
      svg.appendChild(group);
    }
    for (const node of layout.nodes) {
      const group = element("g", { class: "state", "data-id": node.id });
      if (node.shape === "point") {
        group.appendChild(element("circle", { cx: node.x, cy: node.y, r: 4, class: "state-point" }));
      } else {
        group.appendChild(element("circle", { cx: node.x, cy: node.y, r: radius, class: "state-circle" }));
        if (node.shape === "doublecircle") {
          group.appendChild(element("circle", { cx: node.x, cy: node.y, r: radius - 3.5, class: "state-circle final" }));
        }
        group.appendChild(element("text", { x: node.x, y: node.y + 4, class: "state-name" }, node.name));
        node.details.forEach((line, index) => {
          group.appendChild(element("text", { x: node.x, y: node.y + radius + 11 + index * 10, class: "state-detail" }, line));
        });
        group.appendChild(element("title", {}, [`state ${node.name}`, ...node.details].join("\n")));
      }
      svg.appendChild(group);
    }
    return layout;
  }

  return { parseDot, layoutGraph, drawAutomaton };
})();
