// The web view's graph layout: a layered (Sugiyama-style) layout of the IR's states in
// which every edge label is a node of its own. Cycles are broken by reversing back edges,
// states get ranks by longest path (a fork's join below its branches), and each edge runs
// through one box per row it crosses: the first is its label (as wide as the text), the
// others thin. Rows are ordered by barycentres and packed without overlap, so a label never
// covers another label or a box, and an edge never runs behind a box: edges bend only in
// the gaps between rows. Pure computation: the page draws what `layout` returns.
"use strict";
window.FuseraftGraph = (() => {
  const W = 150, H = 46, GAP = 26, ROW_GAP = 22, PAD = 24, THIN = 8, LOOP = 34;

  function triggerLabel(trigger) {
    if (typeof trigger === "string") return trigger;
    if (!trigger) return "";
    if ("signal" in trigger) return trigger.signal;
    if ("finish_key" in trigger) return "key " + trigger.finish_key;
    if ("cond" in trigger) return "when condition";
    return "";
  }

  // What gates an exit, as the DOT and Mermaid views say it.
  function gates(guards) {
    return (guards || []).map((g) => {
      if (g === "human_approval") return "(approval)";
      if (typeof g !== "object" || !g) return String(g);
      if ("counter" in g) return `${g.counter} < ${g.below}`;
      if ("contract" in g) return `contract ${g.contract}`;
      if ("validator" in g) return `validator ${g.validator}`;
      if ("cond" in g) return "if condition";
      return "";
    }).filter(Boolean);
  }

  function short(text, n) {
    text = String(text);
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  // Every edge of the drawing: a fork's branches and merge, then each state's exits.
  function edgesOf(ir) {
    const out = [];
    for (const s of ir.states) {
      const f = s.kind && typeof s.kind === "object" ? s.kind.fork : null;
      if (f) {
        for (const b of f.branches || []) out.push({ from: s.name, to: b, label: "branch", fork: true });
        if (f.join) out.push({ from: s.name, to: f.join, label: "merge · " + (f.merge || ""), fork: true, join: true });
      }
      for (const e of s.exits || []) {
        const approval = (e.guards || []).includes("human_approval");
        out.push({
          from: s.name, to: e.target, approval, back: e.class === "back",
          label: short([triggerLabel(e.trigger)].concat(gates(e.guards)).filter(Boolean).join(" · "), 40),
        });
      }
    }
    return out;
  }

  // Ranks by longest path over the edges left after reversing those that close a cycle
  // (found depth first from the entry, in declaration order).
  function rank(names, edges, entry, forks) {
    const out = new Map(names.map((n) => [n, []]));
    for (const e of edges) if (e.from !== e.to) out.get(e.from).push(e);
    const state = new Map();
    const visit = (n) => {
      state.set(n, "open");
      for (const e of out.get(n)) {
        const seen = state.get(e.to);
        if (seen === "open") e.reversed = true;
        else if (!seen) visit(e.to);
      }
      state.set(n, "done");
    };
    for (const n of [entry].concat(names)) if (n && out.has(n) && !state.has(n)) visit(n);
    const preds = new Map(names.map((n) => [n, []]));
    for (const e of edges) {
      if (e.from === e.to) continue;
      const [a, b] = e.reversed ? [e.to, e.from] : [e.from, e.to];
      preds.get(b).push(a);
    }
    // A fork's join goes below its branches (unless that would close a cycle).
    for (const { branches, join } of forks) {
      for (const b of branches) if (!reaches(preds, b, join)) preds.get(join).push(b);
    }
    const ranks = new Map();
    const of = (n, depth) => {
      if (ranks.has(n)) return ranks.get(n);
      if (depth > names.length) return 0;
      let r = 0;
      for (const p of preds.get(n)) r = Math.max(r, of(p, depth + 1) + 1);
      ranks.set(n, r);
      return r;
    };
    for (const n of names) of(n, 0);
    return ranks;
  }

  // Whether `to` is an ancestor of `from` along `preds` (so `to` → `from` would cycle).
  function reaches(preds, from, to) {
    const stack = [from], seen = new Set();
    while (stack.length) {
      const n = stack.pop();
      if (n === to) return true;
      if (seen.has(n)) continue;
      seen.add(n);
      stack.push(...(preds.get(n) || []));
    }
    return false;
  }

  // One row per rank for the states, one between each two for the labels and bends.
  function rows(ir, edges, ranks, measure) {
    const grid = [];
    const put = (row, item) => {
      (grid[row] = grid[row] || []).push(item);
      item.row = row;
      return item;
    };
    const items = new Map();
    for (const name of ranks.keys()) {
      const info = ir.states.find((s) => s.name === name) || null;
      const loops = edges.filter((e) => e.from === name && e.to === name);
      const loopWidth = loops.length ? LOOP + Math.max(...loops.map((e) => measure(e.label))) : 0;
      items.set(name, put(2 * ranks.get(name), { kind: "node", name, info, w: W + loopWidth, box: W, in: [], out: [] }));
    }
    for (const e of edges) {
      if (e.from === e.to) continue;
      const [a, b] = e.reversed ? [e.to, e.from] : [e.from, e.to];
      const top = items.get(a), bottom = items.get(b);
      e.chain = [];
      let prev = top;
      for (let row = top.row + 1; row < bottom.row; row++) {
        const labelled = row === top.row + 1 && e.label;
        const item = put(row, { kind: labelled ? "label" : "thin", edge: e, w: labelled ? measure(e.label) + 10 : THIN, in: [], out: [] });
        prev.out.push(item);
        item.in.push(prev);
        e.chain.push(item);
        prev = item;
      }
      prev.out.push(bottom);
      bottom.in.push(prev);
      e.top = top;
      e.bottom = bottom;
    }
    for (let r = 0; r < grid.length; r++) grid[r] = grid[r] || [];
    return grid;
  }

  // Barycentre ordering, sweeping down and up a few times.
  function order(grid) {
    const pos = (row) => row.forEach((item, i) => { item.pos = i; });
    grid.forEach(pos);
    const sweep = (r, side) => {
      const row = grid[r];
      for (const item of row) {
        const near = item[side];
        item.bary = near.length ? near.reduce((s, n) => s + n.pos, 0) / near.length : item.pos;
      }
      row.sort((a, b) => a.bary - b.bary || a.pos - b.pos);
      pos(row);
    };
    for (let i = 0; i < 6; i++) {
      for (let r = 1; r < grid.length; r++) sweep(r, "in");
      for (let r = grid.length - 2; r >= 0; r--) sweep(r, "out");
    }
  }

  // Where an item's edges attach: a node's box centre, a thin box's middle, a label's left.
  const anchor = (item) => item.x + (item.kind === "node" ? item.box / 2 : item.kind === "label" ? 0 : item.w / 2);
  const offset = (item) => anchor(item) - item.x;

  // x: each row packed without overlap, its items pulled toward their neighbours' anchors.
  function place(grid) {
    for (const row of grid) {
      let x = 0;
      for (const item of row) {
        item.x = x;
        x += item.w + GAP;
      }
    }
    const settle = (row, side) => {
      const want = row.map((item) => {
        const near = item[side];
        if (!near.length) return item.x;
        return near.reduce((s, n) => s + anchor(n), 0) / near.length - offset(item);
      });
      const left = [], right = [];
      for (let i = 0; i < row.length; i++) {
        left[i] = i ? Math.max(want[i], left[i - 1] + row[i - 1].w + GAP) : want[i];
      }
      for (let i = row.length - 1; i >= 0; i--) {
        right[i] = i < row.length - 1 ? Math.min(want[i], right[i + 1] - GAP - row[i].w) : want[i];
      }
      for (let i = 0; i < row.length; i++) {
        const x = (left[i] + right[i]) / 2;
        row[i].x = i ? Math.max(x, row[i - 1].x + row[i - 1].w + GAP) : x;
      }
    };
    for (let i = 0; i < 8; i++) {
      for (let r = 1; r < grid.length; r++) settle(grid[r], "in");
      for (let r = grid.length - 2; r >= 0; r--) settle(grid[r], "out");
    }
    const min = Math.min(...grid.flat().map((item) => item.x));
    for (const item of grid.flat()) item.x += PAD - min;
  }

  function layout(ir, measure) {
    const names = ir.states.map((s) => s.name);
    const edges = edgesOf(ir).filter((e) => e.to === "end" || names.includes(e.to));
    if (edges.some((e) => e.to === "end")) names.push("end");
    const forks = ir.states
      .map((s) => (s.kind && typeof s.kind === "object" ? s.kind.fork : null))
      .filter((f) => f && f.join)
      .map((f) => ({ branches: f.branches || [], join: f.join }));
    const ranks = rank(names, edges, ir.entry, forks);
    const grid = rows(ir, edges, ranks, measure);
    order(grid);
    place(grid);
    let y = PAD;
    grid.forEach((row, r) => {
      const h = r % 2 === 0 ? H : 14;
      for (const item of row) {
        item.y = y;
        item.h = h;
      }
      y += h + ROW_GAP;
    });
    const nodes = new Map();
    for (const item of grid.flat()) if (item.kind === "node") nodes.set(item.name, item);
    for (const n of nodes.values()) ports(n);
    const drawn = edges.map((e) => ({ ...e, d: e.from === e.to ? loop(nodes.get(e.from)) : path(e), at: labelAt(e, nodes) }));
    const width = Math.max(...grid.flat().map((i) => i.x + i.w)) + PAD;
    return { width, height: y - ROW_GAP + PAD, nodes, edges: drawn, W, H };
  }

  // Where each edge meets a box: spread along its bottom (and top) side in the order of
  // the rows below (and above), so that edges between the same two rows do not share a point.
  function ports(n) {
    for (const [side, list] of [["outPorts", n.out], ["inPorts", n.in]]) {
      const sorted = [...list].sort((a, b) => anchor(a) - anchor(b));
      const step = Math.min(18, (n.box - 20) / Math.max(1, sorted.length - 1));
      n[side] = new Map(sorted.map((item, i) => [item, anchor(n) + (i - (sorted.length - 1) / 2) * step]));
    }
  }

  // An edge's path in its own direction, through its chain, bending only between rows.
  function path(e) {
    const first = e.chain[0] || e.bottom, last = e.chain[e.chain.length - 1] || e.top;
    const points = [[e.top.outPorts.get(first) ?? anchor(e.top), e.top.y + e.top.h]];
    for (const item of e.chain) points.push([anchor(item), item.y], [anchor(item), item.y + item.h]);
    points.push([e.bottom.inPorts.get(last) ?? anchor(e.bottom), e.bottom.y]);
    if (e.reversed) points.reverse();
    let d = `M${points[0][0]},${points[0][1]}`;
    for (let i = 1; i < points.length; i++) {
      const [x0, y0] = points[i - 1], [x1, y1] = points[i];
      if (x0 === x1) d += ` L${x1},${y1}`;
      else d += ` C${x0},${(y0 + y1) / 2} ${x1},${(y0 + y1) / 2} ${x1},${y1}`;
    }
    return d;
  }

  function loop(node) {
    return `M${node.x + node.box},${node.y + 14} c${LOOP},-18 ${LOOP},36 0,18`;
  }

  // The label's text origin: right of its line in its own box, or right of a self-loop.
  function labelAt(e, nodes) {
    if (e.from === e.to) {
      const n = nodes.get(e.from);
      return { x: n.x + n.box + LOOP - 4, y: n.y + H / 2 + 4 };
    }
    const box = e.chain.find((item) => item.kind === "label");
    return box ? { x: box.x + 5, y: box.y + 11 } : null;
  }

  return { layout, short };
})();
