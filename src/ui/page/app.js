// The web view's script: draws the workflow graph from the IR's JSON view and the run's
// turns from its events (live) or from a session log (the session browser). Every text
// that comes from a run (model replies, tool arguments and results, names) is inserted with
// textContent, never as HTML: model output is untrusted.
"use strict";
(() => {
  const body = document.body;
  const token = body.dataset.token;
  const mode = body.dataset.mode;
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  function url(path, params) {
    const u = new URL(path, location.href);
    u.search = "";
    u.searchParams.set("token", token);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, String(v));
    return u.toString();
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function short(text, n) {
    text = String(text);
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  function setStatus(text, cls) {
    const s = $("status");
    s.textContent = text;
    s.className = cls || "";
  }

  // ---- the graph -------------------------------------------------------------------------

  const graph = { nodes: new Map(), edges: [], current: null };

  // Draws the IR's graph as `graph.js` lays it out (labels measured in the page's font).
  function drawGraph(ir) {
    const root = $("graph");
    root.replaceChildren();
    graph.nodes.clear();
    graph.edges = [];
    graph.current = null;
    graph.entry = ir && ir.entry;
    // No graph, no pane: the page never shows an empty box.
    $("graph-pane").hidden = !ir || !Array.isArray(ir.states);
    if (!ir || !Array.isArray(ir.states)) return;
    const probe = svgEl("text", { class: "label" });
    root.append(probe);
    const measure = (text) => {
      probe.textContent = text;
      return Math.ceil(probe.getComputedTextLength());
    };
    const laid = FuseraftGraph.layout(ir, measure);
    probe.remove();
    root.setAttribute("width", laid.width);
    root.setAttribute("height", laid.height);
    root.setAttribute("viewBox", `0 0 ${laid.width} ${laid.height}`);
    const defs = svgEl("defs");
    const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
    marker.append(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a94a3" }));
    defs.append(marker);
    const edgeLayer = svgEl("g", { class: "edges" });
    const labelLayer = svgEl("g", { class: "labels" });
    const nodeLayer = svgEl("g", { class: "nodes" });
    root.append(defs, edgeLayer, nodeLayer, labelLayer);
    for (const [name, n] of laid.nodes) {
      const info = n.info;
      const terminal = info === null || (info.kind && typeof info.kind === "object" && "terminal" in info.kind);
      const g = svgEl("g", { class: "node" + (terminal ? " terminal" : ""), transform: `translate(${n.x},${n.y})` });
      g.dataset.state = name;
      g.append(svgEl("rect", { width: laid.W, height: laid.H, rx: info === null ? 23 : 8 }));
      const agent = info && info.agent && info.agent !== name ? info.agent : null;
      g.append(svgEl("text", { x: laid.W / 2, y: agent ? 19 : 28 }, FuseraftGraph.short(name, 20)));
      if (agent) g.append(svgEl("text", { class: "agent", x: laid.W / 2, y: 35 }, FuseraftGraph.short(agent, 22)));
      g.append(svgEl("title", {}, name + (agent ? ` (${agent})` : "")));
      nodeLayer.append(g);
      graph.nodes.set(name, { g, agent: info ? info.agent : null });
    }
    for (const e of laid.edges) {
      const back = e.back || e.reversed;
      const path = svgEl("path", { d: e.d, class: "edge" + (back ? " back" : "") + (e.approval ? " needs-approval" : "") + (e.fork ? " fork" : ""), "marker-end": "url(#arrow)" });
      path.dataset.from = e.from;
      path.dataset.to = e.to;
      edgeLayer.append(path);
      if (e.label && e.at) {
        const text = svgEl("text", { class: "label", x: e.at.x, y: e.at.y }, e.label);
        text.dataset.from = e.from;
        text.dataset.to = e.to;
        labelLayer.append(text);
      }
      graph.edges.push(path);
    }
  }

  function highlight(state) {
    if (graph.current) graph.current.classList.remove("current");
    const node = graph.nodes.get(state);
    graph.current = node ? node.g : null;
    if (node) node.g.classList.add("current", "visited");
  }

  function markVisited(state) {
    const node = graph.nodes.get(state);
    if (node) node.g.classList.add("visited");
  }

  function markTaken(from, to) {
    for (const path of graph.edges) {
      if (path.dataset.from === from && path.dataset.to === to) path.classList.add("taken");
    }
  }

  // ---- turn cards ------------------------------------------------------------------------

  const cards = new Map();

  function card(turn, agent, state) {
    let c = cards.get(turn);
    if (!c) {
      const li = el("li", "card");
      li.dataset.turn = turn;
      const head = el("h3");
      const meta = el("div", "muted meta");
      const tools = el("ul", "tools");
      const reply = el("pre", "reply");
      reply.hidden = true;
      const notes = el("ul", "notes");
      li.append(head, meta, tools, reply, notes);
      $("turns").append(li);
      c = { li, head, meta, tools, reply, notes, started: null };
      cards.set(turn, c);
    }
    if (agent !== undefined) {
      c.li.dataset.agent = agent || "";
      c.li.dataset.state = state || "";
      c.head.textContent = `Turn ${turn + 1} · ${agent || "?"}` + (state && state !== agent ? ` · ${state}` : "");
    }
    return c;
  }

  function note(turn, cls, text) {
    // A note of a turn whose card is not drawn yet (a session's task, a routing marker)
    // goes to the latest card, or above the cards.
    const latest = [...cards.values()].pop();
    const target = cards.has(turn) ? cards.get(turn).notes : latest ? latest.notes : $("run-notes");
    target.append(el("li", "note " + cls, text));
  }

  function toolCalls(c, calls) {
    for (const call of calls || []) {
      const li = el("li", "tool" + (call.ok ? "" : " failed"));
      li.append(el("span", "name", call.name + (call.ok ? "" : " (failed)")));
      li.append(el("pre", "args", JSON.stringify(call.args, null, 1)));
      if (call.result !== null && call.result !== undefined) li.append(el("pre", "result", short(call.result, 4000)));
      c.tools.append(li);
    }
  }

  function replyText(c, text) {
    c.li.classList.remove("streaming");
    if (text) {
      c.reply.textContent = short(text, 20000);
      c.reply.hidden = false;
    }
  }

  // Text the model is writing, as it comes (`ui_text`); the turn's end replaces it with the
  // reply.
  function streamText(c, text) {
    if (!c.li.classList.contains("streaming")) {
      c.li.classList.add("streaming");
      c.reply.textContent = "";
    }
    c.reply.textContent = short(c.reply.textContent + (text || ""), 20000);
    c.reply.hidden = false;
  }

  // How an ending is coloured: green only for a completed run; a run stopped before its
  // end (cancelled, out of turns) is amber, a failed one red.
  function ending(outcome) {
    return outcome === "completed" ? "completed" : ["cancelled", "max_turns", "resumable"].includes(outcome) ? "cancelled" : "failed";
  }

  function outcome(text, end) {
    const o = $("outcome");
    o.textContent = text;
    o.className = ending(end);
    o.hidden = false;
    setStatus(end, ending(end));
  }

  // ---- a conversation read back (a session, or the turns before a resume) ---------------

  // The orchestrator's route marker, between agents (`[fuseraft: A → B]`), or a back edge's
  // new phase, from its signal to the state it restarts at (`[fuseraft: S → B — new phase N]`).
  const ROUTE = /^\[fuseraft: (.+?) → (.+?)(?: — new phase (\d+))?\]$/;

  // The state `agent` was routed to from `from`: one `from` has an exit to, else any it runs.
  function routedTo(from, agent) {
    const targets = graph.edges.filter((p) => p.dataset.from === from).map((p) => p.dataset.to);
    const runs = [...graph.nodes.entries()].filter(([name, n]) => name === agent || n.agent === agent);
    const hit = runs.find(([name]) => targets.includes(name)) || runs[0];
    return hit ? hit[0] : null;
  }

  // Draws `messages` ({role, agent, turn, content, tool_calls, usage}) as the live view
  // draws a run: a card per reply, routes as routes (the exits taken, the states visited),
  // the operator's and the orchestrator's messages as notes. Returns the state reached.
  function conversation(messages) {
    let at = graph.entry || null;
    if (at) markVisited(at);
    for (const m of messages) {
      const turn = m.turn ?? 0;
      const content = String(m.content || "");
      const route = m.role !== "assistant" && m.agent === "orchestrator" ? ROUTE.exec(content) : null;
      if (m.role === "assistant") {
        const node = at && graph.nodes.get(at);
        const here = node && (at === m.agent || node.agent === m.agent) ? at : routedTo(null, m.agent);
        if (here) markVisited(here);
        const c = card(turn, m.agent, here || "");
        const u = m.usage || {};
        c.meta.textContent = `tokens in ${u.input ?? 0} / out ${u.output ?? 0} · ${(m.tool_calls || []).length} tool call(s)`;
        toolCalls(c, m.tool_calls);
        replyText(c, content);
      } else if (route && route[3]) {
        // A back edge's new phase: the signal that took it and the state it restarts at.
        note(turn, "warn", `phase ${route[3]} begins: ${route[1]} → ${route[2]}`);
      } else if (route) {
        const to = routedTo(at, route[2]);
        note(turn, "route", `→ ${route[1]} to ${route[2]}`);
        if (to) {
          markTaken(at, to);
          markVisited(to);
          at = to;
        }
      } else if (m.agent === "orchestrator") {
        note(turn, "correction", content.replace(/^\[fuseraft: ?([^\]]*)\]\n?/, "$1\n").trim());
      } else {
        note(turn, m.agent === "operator" ? "operator" : "", `${m.agent || "user"}: ${short(content, 2000)}`);
      }
    }
    return at;
  }

  // ---- fork branches, side by side --------------------------------------------------------

  // The fork under way: its block in the turn list and one column per branch state.
  let fork = null;

  function startFork(turn, p, columns) {
    const li = el("li", "fork");
    li.dataset.turn = turn;
    li.dataset.state = p.state || "";
    const head = el("h3", null, `Turn ${turn + 1} · fork ${p.state || ""}`);
    const row = el("div", "columns");
    const merge = el("div", "merge");
    merge.hidden = true;
    const notes = el("ul", "notes");
    li.append(head, row, merge, notes);
    $("turns").append(li);
    // Without columns (an older server), one per agent named by the event.
    const wanted = Array.isArray(columns) ? columns : (p.branches || []).map((agent) => ({ state: agent, agent }));
    const byState = new Map();
    for (const c of wanted) {
      const col = el("div", "branch");
      col.dataset.state = c.state;
      col.dataset.agent = c.agent;
      col.append(el("h4", null, c.agent + (c.state !== c.agent ? ` · ${c.state}` : "")));
      const list = el("ol", "branch-cards");
      col.append(list);
      row.append(col);
      byState.set(c.state, { col, list, card: null });
    }
    if (Array.isArray(p.kept) && p.kept.length) notes.append(el("li", "note", `kept from before the resume: ${p.kept.join(", ")}`));
    fork = { turn, li, merge, byState };
    // Notes of this turn (routing) go under the fork.
    cards.set(turn, { li, notes });
    highlight(p.state);
  }

  // The column of a branch event: by the state it names, or else by its agent.
  function column(m) {
    if (!fork || m.turn !== fork.turn) return null;
    const state = m.payload && m.payload.state;
    if (state && fork.byState.has(state)) return fork.byState.get(state);
    for (const c of fork.byState.values()) if (c.col.dataset.agent === m.agent) return c;
    return null;
  }

  function branchCard(c, m) {
    const li = el("li", "card branch-card");
    li.dataset.turn = m.turn;
    li.dataset.agent = m.agent || "";
    li.dataset.state = c.col.dataset.state;
    const head = el("h3", null, m.agent || "?");
    const meta = el("div", "muted meta", "running…");
    const tools = el("ul", "tools");
    const reply = el("pre", "reply");
    reply.hidden = true;
    const notes = el("ul", "notes");
    li.append(head, meta, tools, reply, notes);
    c.list.append(li);
    c.card = { li, head, meta, tools, reply, notes, started: Date.parse(m.ts) };
    c.col.classList.add("running");
    markVisited(c.col.dataset.state);
    return c.card;
  }

  // Handles a branch's event; false when `m` is not one.
  function branchEvent(m) {
    const c = column(m);
    if (!c) return false;
    const p = m.payload || {};
    switch (m.event_type) {
      case "turn_start":
        branchCard(c, m);
        return true;
      case "ui_text":
        streamText(c.card || branchCard(c, m), m.text);
        return true;
      case "turn_end": {
        const card = c.card || branchCard(c, m);
        const elapsed = card.started ? ((Date.parse(m.ts) - card.started) / 1000).toFixed(2) + " s" : "";
        card.meta.textContent = `tokens in ${p.input_tokens ?? 0} / out ${p.output_tokens ?? 0} · ${p.tool_calls ?? 0} tool call(s) · ${elapsed}`;
        if (m.reply) {
          toolCalls(card, m.reply.tool_calls);
          replyText(card, m.reply.content);
        }
        return true;
      }
      case "branch_end":
        c.col.classList.remove("running");
        c.col.classList.add("done");
        return true;
      case "branch_error":
        c.col.classList.remove("running");
        c.col.classList.add("failed");
        (c.card ? c.card.notes : c.list).append(el("li", "note fail", `error: ${p.error || ""}`));
        return true;
      default: {
        // The server's words for every event kind (`src/ui/cards.rs`).
        (c.card ? c.card.notes : c.list).append(el("li", "note" + (m.event_type === "tool_blocked" ? " fail" : ""), m.text || m.event_type));
        return true;
      }
    }
  }

  function joinFork(m) {
    if (!fork) return;
    const p = m.payload || {};
    fork.merge.hidden = false;
    fork.merge.append(el("h4", null, `merge · ${p.strategy || "?"} · ${p.branches ?? 0} branch(es)`));
    if (typeof m.merged === "string") fork.merge.append(el("pre", "merged", short(m.merged, 20000)));
    fork.li.classList.add("joined");
    fork = null;
  }

  // ---- approvals -------------------------------------------------------------------------

  const approvals = new Map();

  // The turn a question follows: the latest card's.
  function latestTurn() {
    const latest = [...cards.keys()].pop();
    return latest === undefined ? -1 : latest;
  }

  // An answered question leaves the open questions for the card of the turn it followed,
  // so the question waiting now is the only one above the turns.
  function settle(box, turn) {
    const c = cards.get(turn) || [...cards.values()].pop();
    const li = el("li", "note settled");
    li.append(box);
    (c ? c.notes : $("run-notes")).append(li);
  }

  function askApproval(p) {
    const box = el("div", "approval");
    box.dataset.id = p.id;
    box.dataset.kind = p.kind;
    const what = p.kind === "tool"
      ? `Approve this tool call by ${p.from}?`
      : p.kind === "plan"
        ? "Approve the manager's plan (in the notes above)?"
        : p.kind === "escalation"
          ? `${p.from} is stuck (${p.signal}). Let it try again?`
          : p.kind === "human"
            ? `${p.from} (${p.to}) asks you:`
            : `Approve route ${p.from} → ${p.to} on ${p.signal}?`;
    box.append(el("p", null, what));
    if (p.kind === "tool") box.append(el("pre", null, p.to));
    if (p.kind === "human") box.append(el("pre", null, p.signal.replace(/^human: /, "")));
    // A tama `human` step: the text is the answer; skipping answers an empty line.
    const human = p.kind === "human";
    const yes = el("button", "approve", human ? "Skip" : "Approve");
    const no = el("button", "refuse", human ? "Stop the run" : "Refuse");
    const buttons = [yes, no];
    const answer = el("span", "answer muted");
    const post = async (query, body) => {
      for (const b of buttons) b.disabled = true;
      try {
        const init = { method: "POST" };
        if (body !== undefined) init.body = body;
        const r = await fetch(url("approve", { id: p.id, ...query }), init);
        if (!r.ok) {
          answer.textContent = r.status === 409 ? "already answered" : `error ${r.status}`;
          // A server's question: its refusal names the first answer.
          if (mode === "served") answer.textContent = (await r.text()).trim();
        } else if (mode === "served") {
          // The server took it; no run of this page tells it so.
          answered(await r.json());
        }
      } catch (e) {
        answer.textContent = "the run is gone";
      }
    };
    yes.addEventListener("click", () => post({ approved: true }));
    no.addEventListener("click", () => post({ approved: false }));
    // An escalation or a plan review also takes the operator's direction: the agent tries
    // again with it, or the manager revises its plan with it.
    let text = null;
    if (p.redirectable) {
      text = el("textarea", "message");
      text.rows = 2;
      text.placeholder = p.kind === "plan"
        ? "What the manager should change in its plan"
        : human
          ? "Your answer"
          : "What the agent should do instead";
      const redirect = el("button", "redirect", human ? "Answer" : "Redirect");
      redirect.addEventListener("click", () => {
        if (text.value.trim()) post({ answer: "redirect" }, text.value);
      });
      buttons.push(redirect);
      box.append(text);
    }
    box.append(...buttons, answer);
    $("approvals").append(box);
    approvals.set(p.id, { box, buttons, text, answer, turn: latestTurn() });
  }

  function answered(p) {
    const a = approvals.get(p.id);
    if (!a) return;
    for (const b of a.buttons) b.disabled = true;
    if (a.text) a.text.disabled = true;
    a.answer.textContent = p.redirect != null
      ? `redirected (${p.by}): ${p.redirect}`
      : `${p.approved ? "approved" : "refused"} (${p.by})`;
    a.box.classList.add("answered");
    a.box.dataset.approved = p.approved;
    settle(a.box, a.turn);
  }

  // ---- --hitl pauses ---------------------------------------------------------------------

  const pauses = new Map();

  function askPause(p) {
    const box = el("div", "pause");
    box.dataset.id = p.id;
    box.append(el("p", null, `Paused after turn ${p.turn}` + (p.agent ? ` by ${p.agent}` : "") + ` · now in ${p.state}`));
    const controls = el("div", "controls");
    const text = el("textarea", "message");
    text.rows = 2;
    text.placeholder = "A message to the team (sent as the operator's)";
    const go = el("button", "continue", "Continue");
    const send = el("button", "send", "Send message");
    const quit = el("button", "quit", "Quit (resumable)");
    const answer = el("span", "answer muted");
    const post = async (action, message) => {
      for (const b of [go, send, quit]) b.disabled = true;
      try {
        const init = { method: "POST" };
        if (message !== undefined) init.body = message;
        const r = await fetch(url("pause", { id: p.id, action }), init);
        if (!r.ok) {
          answer.textContent = r.status === 409 ? "already answered" : (await r.text()).trim();
          if (r.status !== 409) for (const b of [go, send, quit]) b.disabled = false;
        }
      } catch (e) {
        answer.textContent = "the run is gone";
      }
    };
    go.addEventListener("click", () => post("continue"));
    send.addEventListener("click", () => {
      if (text.value.trim()) post("message", text.value);
      else answer.textContent = "type a message first";
    });
    quit.addEventListener("click", () => post("quit"));
    controls.append(text, go, send, quit);
    box.append(controls, answer);
    $("approvals").append(box);
    // `turn` counts turns done: the pause follows the card of turn index `turn - 1`.
    pauses.set(p.id, { box, controls, answer, turn: p.turn - 1 });
  }

  function pauseAnswered(p) {
    const a = pauses.get(p.id);
    if (a) {
      a.controls.remove();
      const what = { continue: "continued", message: "message sent", quit: "quit" }[p.action] || p.action;
      a.answer.textContent = `${what} (${p.by})`;
      a.box.classList.add("answered");
      a.box.dataset.action = p.action;
      settle(a.box, a.turn);
    }
    if (p.action === "message" && typeof p.message === "string") note(-1, "operator", `operator: ${short(p.message, 2000)}`);
  }

  // ---- live run --------------------------------------------------------------------------

  const eventsSeen = [];

  // ---- per-agent totals: turns, tokens, cost, tool calls and time, from the turn events ---

  const agentTotals = new Map();
  const turnStarted = new Map();

  function countTurn(m) {
    const p = m.payload || {};
    if (!m.agent) return;
    if (m.event_type === "turn_start") turnStarted.set(m.agent, Date.parse(m.ts));
    if (m.event_type !== "turn_end") return;
    const t = agentTotals.get(m.agent) || { turns: 0, input: 0, output: 0, tools: 0, usd: null, seconds: 0 };
    t.turns += 1;
    t.input += p.input_tokens || 0;
    t.output += p.output_tokens || 0;
    t.tools += p.tool_calls || 0;
    if (p.cost) t.usd = (t.usd || 0) + p.cost.usd;
    const since = turnStarted.get(m.agent);
    if (since) t.seconds += (Date.parse(m.ts) - since) / 1000;
    turnStarted.delete(m.agent);
    agentTotals.set(m.agent, t);
  }

  function showAgentTotals() {
    const table = $("agents");
    if (!table || !agentTotals.size) return;
    table.textContent = "";
    const head = el("tr");
    for (const h of ["agent", "turns", "tokens in", "tokens out", "cost", "tool calls", "time"]) head.append(el("th", null, h));
    table.append(head);
    for (const [agent, t] of [...agentTotals].sort((a, b) => a[0].localeCompare(b[0]))) {
      const row = el("tr");
      row.dataset.agent = agent;
      const cost = t.usd === null ? "—" : `$${t.usd.toFixed(4)}`;
      for (const v of [agent, t.turns, t.input, t.output, cost, t.tools, `${t.seconds.toFixed(1)} s`]) row.append(el("td", null, String(v)));
      table.append(row);
    }
    table.hidden = false;
  }

  function handle(m) {
    eventsSeen.push(m.event_type);
    body.dataset.events = eventsSeen.length;
    countTurn(m);
    const p = m.payload || {};
    const turn = m.turn;
    if (fork && m.agent && branchEvent(m)) return;
    switch (m.event_type) {
      case "fork_start":
        startFork(turn, p, m.columns);
        break;
      case "fork_join":
        joinFork(m);
        break;
      case "session_start":
        $("title").textContent = `${p.program || ""} · ${p.task || ""}`;
        setStatus("running", "running");
        if (p.start_state) highlight(p.start_state);
        break;
      case "session_resumed": {
        // The turns before the resume, drawn as they were, then the run goes on live.
        const e = m.earlier || {};
        $("title").textContent = `${e.program || ""} · ${e.task || ""}`;
        setStatus("running", "running");
        conversation(e.messages || []);
        note(turn, "", m.text || "session resumed");
        if (p.state) highlight(p.state);
        break;
      }
      case "ui_text":
        streamText(card(turn), m.text);
        break;
      case "turn_start": {
        const c = card(turn, m.agent, p.state);
        c.started = Date.parse(m.ts);
        highlight(p.state);
        break;
      }
      case "turn_end": {
        const c = card(turn);
        const elapsed = c.started ? ((Date.parse(m.ts) - c.started) / 1000).toFixed(2) + " s" : "";
        c.meta.textContent = `tokens in ${p.input_tokens ?? 0} / out ${p.output_tokens ?? 0} · ${p.tool_calls ?? 0} tool call(s) · ${elapsed}`;
        if (m.reply) {
          toolCalls(c, m.reply.tool_calls);
          replyText(c, m.reply.content);
        }
        break;
      }
      case "signal_detected":
        note(turn, "", `signal ${p.signal} (${p.via})`);
        break;
      case "agent_routed":
        note(turn, "route", `→ ${p.from} to ${p.to}` + (p.signal ? ` on ${p.signal}` : ""));
        markTaken(p.from, p.to);
        markVisited(p.to);
        break;
      case "validation_fail":
        note(turn, "fail", `✗ ${p.validator || p.contract || "check"}: ${p.error || ""}`);
        break;
      case "correction_injected":
        note(turn, "correction", `correction: ${p.reason || ""}`);
        break;
      case "hitl_requested":
        note(turn, "warn", `approval asked: ${p.from} → ${p.to} on ${p.signal}`);
        break;
      case "hitl_answered":
        note(turn, p.approved ? "" : "warn", p.approved ? "approved" : "refused");
        break;
      case "magentic_orientation":
        note(turn, "", `manager's facts: ${p.facts || ""}\nmanager's plan:\n${p.plan || ""}`);
        break;
      case "magentic_plan":
        // The plan the rounds start with, shown by its orientation (or revision) note.
        break;
      case "magentic_replan":
        note(turn, "warn", `new plan (replan ${p.cycle}):\n${p.plan || ""}`);
        break;
      case "magentic_plan_revised":
        note(turn, "", `revised plan:\n${p.plan || ""}`);
        break;
      case "magentic_ledger":
        note(turn, p.stalls ? "warn" : "", p.satisfied
          ? "manager: request satisfied"
          : `manager → ${p.next_speaker}${p.stalls ? ` (stall ${p.stalls})` : ""}: ${p.instruction || ""}`);
        break;
      case "magentic_ledger_invalid":
        note(turn, "correction", `manager's ledger unusable (${p.consecutive}×): ${p.error || ""}`);
        break;
      case "ui_approval":
        askApproval(p);
        break;
      case "ui_approval_answered":
        answered(p);
        break;
      case "ui_pause":
        askPause(p);
        highlight(p.state);
        break;
      case "ui_pause_answered":
        pauseAnswered(p);
        break;
      case "operator_message":
        break;
      case "session_end": {
        outcome(`${p.outcome} after ${p.turns} turn(s) · tokens in ${p.input_tokens} / out ${p.output_tokens}` + (p.reason ? ` · ${p.reason}` : ""), p.outcome);
        showAgentTotals();
        if (graph.current) graph.current.classList.remove("current");
        body.dataset.ended = "true";
        break;
      }
      case "model_error":
      case "tool_blocked":
      case "branch_error":
      case "budget_exceeded":
        note(turn, "fail", m.text || m.event_type);
        break;
      case "warning":
      case "adversarial_stage_timeout":
      case "back_edge_escalation":
      case "keyword_not_found":
      case "multi_keyword":
      case "json_missing":
        note(turn, "warn", m.text || m.event_type);
        break;
      default:
        // The server's words for every event kind (`src/ui/cards.rs`).
        note(turn, "", m.text || m.event_type);
    }
  }

  async function live() {
    const ir = await (await fetch(url("graph"))).json();
    drawGraph(ir);
    const source = new EventSource(url("events"));
    source.onmessage = (e) => handle(JSON.parse(e.data));
    source.onerror = () => {
      if (body.dataset.ended) {
        source.close();
      } else if (source.readyState === EventSource.CLOSED) {
        setStatus("disconnected", "failed");
      }
    };
    body.dataset.ready = "true";
  }

  // ---- session browser -------------------------------------------------------------------

  async function browse() {
    $("sessions").hidden = false;
    const list = await (await fetch(url("sessions"))).json();
    const ul = $("session-list");
    if (!list.length) ul.append(el("li", "muted", mode === "served" ? "no session runs on the server" : "no sessions in this work dir"));
    for (const s of list) ul.append(listed(s));
    body.dataset.ready = "true";
    // A server's list changes as its sessions go on, start and end.
    if (mode === "served") setInterval(() => relist().catch(() => {}), 5000);
    // The session the URL names, else the newest: the page opens on a session, not a blank.
    const wanted = location.hash.slice(1);
    const first = [...ul.children].find((li) => li.dataset.id === wanted) || (list.length ? ul.children[0] : null);
    if (first) show(first.dataset.id, first);
    else $("graph-pane").hidden = true;
  }

  function metaOf(s) {
    return mode === "served" ? `${s.status} · ${s.turns} turn(s)` : `${s.status} · ${s.turns} turn(s) · ${s.updated}`;
  }

  // A session's entry in the list.
  function listed(s) {
    const li = el("li");
    li.dataset.id = s.id;
    li.append(el("div", "id", s.id), el("div", "meta", metaOf(s)), el("div", null, short(s.task, 80)));
    if (s.waiting) li.dataset.waiting = s.waiting.id;
    li.addEventListener("click", () => show(s.id, li));
    return li;
  }

  // The server's list again: entries updated, new sessions added, ended ones (not shown) gone.
  async function relist() {
    const list = await (await fetch(url("sessions"))).json();
    const ul = $("session-list");
    const now = new Map(list.map((s) => [s.id, s]));
    for (const li of [...ul.children]) {
      const s = now.get(li.dataset.id);
      if (s) {
        li.querySelector(".meta").textContent = metaOf(s);
        if (s.waiting) li.dataset.waiting = s.waiting.id;
        else delete li.dataset.waiting;
        now.delete(li.dataset.id);
      } else if (li.dataset.id ? !li.classList.contains("selected") : list.length) {
        li.remove();
      }
    }
    for (const s of now.values()) ul.append(listed(s));
  }

  // The latest session asked for: an earlier answer arriving after it is dropped.
  let showing = 0;

  // What a served session's view was drawn from: a refresh that finds the same draws nothing.
  let drawn = null;

  async function show(id, li, refresh) {
    const mine = refresh ? showing : ++showing;
    for (const other of $("session-list").children) other.classList.remove("selected");
    li.classList.add("selected");
    history.replaceState(null, "", `#${id}`);
    const r = await fetch(url("session", { id }));
    const s = r.ok ? await r.json() : await r.text();
    if (mine !== showing) return;
    if (mode === "served" && r.ok) {
      // A server's session goes on: looked at again every two seconds until it ends.
      const seen = JSON.stringify([id, s.machine, s.waiting && s.waiting.id, (s.answers || []).length, (s.messages || []).length]);
      if (!(s.machine || {}).Outcome) setTimeout(() => { if (mine === showing) show(id, li, true); }, 2000);
      if (refresh && seen === drawn) return;
      drawn = seen;
    }
    cards.clear();
    $("turns").replaceChildren();
    $("run-notes").replaceChildren();
    $("approvals").replaceChildren();
    $("outcome").hidden = true;
    delete body.dataset.shown;
    if (!r.ok) {
      note(-1, "fail", s);
      return;
    }
    drawGraph(s.graph);
    $("title").textContent = `${s.id} · ${s.task || ""}`;
    if (s.unverified) note(-1, "warn", "this session is not authenticated (written without a session key)");
    const at = conversation((s.messages || []).map((m) => ({
      role: m.Role, agent: m.AgentName, turn: m.TurnIndex, content: m.Content,
      usage: { input: (m.Usage || {}).InputTokens, output: (m.Usage || {}).OutputTokens },
      tool_calls: (m.ToolCalls || []).map((t) => ({ name: t.Name, args: t.Args, result: t.Result, ok: t.Succeeded })),
    })));
    // Each turn of an authenticated local session can be the start of a new one.
    if (!s.unverified && !s.served) {
      for (const [turn, c] of cards) {
        if (!c.li.dataset.agent) continue;
        const button = el("button", "rewind", "re-run from here");
        button.title = `a new session that shares turns 1–${turn + 1} and runs on from there`;
        button.addEventListener("click", () => rewindFrom(s.id, turn + 1, button));
        c.head.append(button);
      }
    }
    const machine = s.machine || {};
    const ended = machine.Outcome;
    const state = machine.State || at;
    // The last route needs no marker when one agent runs both states (a terminal state).
    if (state && at && state !== at) markTaken(at, state);
    if (state) markVisited(state);
    // A completed run that left through an exit to `end` is at `end`.
    const left = ended === "completed" && graph.edges.some((p) => p.dataset.from === state && p.dataset.to === "end");
    if (left) {
      markTaken(state, "end");
      highlight("end");
    } else if (state) {
      highlight(state);
    }
    if (s.served) {
      // A server's session: running, or waiting on the question the page can answer.
      const status = ended || (s.waiting ? "waiting" : "running");
      outcome(`${status} after ${machine.Turn ?? 0} turn(s)` + (machine.Reason ? ` · ${machine.Reason}` : ""), status);
      if (!ended) {
        $("outcome").className = "going";
        setStatus(status, "running");
      }
      const meta = li.querySelector(".meta");
      if (meta) meta.textContent = metaOf({ status: s.waiting ? `waits on ${s.waiting.id}` : status, turns: machine.Turn ?? 0 });
      if (s.waiting) li.dataset.waiting = s.waiting.id;
      else delete li.dataset.waiting;
      for (const a of s.answers || []) $("run-notes").append(el("li", "note answered", `${a.id} (${a.question}) answered ${a.decision} by ${a.by} at ${a.at}`));
      if (s.waiting) askApproval(s.waiting);
      body.dataset.shown = id;
      return;
    }
    const status = ended || (s.cancelled ? "cancelled" : "resumable");
    outcome(`${status} after ${machine.Turn ?? 0} turn(s)` + (ended || s.cancelled ? "" : " · not finished") + (machine.Reason ? ` · ${machine.Reason}` : "")
      + (ended === "completed" ? "" : ` · resumable with --resume ${s.id}`), status);
    body.dataset.shown = id;
  }

  // `POST /rewind`: a new session from `id` after `turn`, listed, with the command that
  // runs it on (the page runs nothing).
  async function rewindFrom(id, turn, button) {
    button.disabled = true;
    const r = await fetch(url("rewind", { id, turn }), { method: "POST" });
    const made = r.ok ? await r.json() : await r.text();
    if (!r.ok) {
      $("run-notes").append(el("li", "note fail", `re-run from turn ${turn}: ${made}`));
      button.disabled = false;
      return;
    }
    const said = el("li", "note rewound", `new session ${made.id} shares turns 1–${turn} of ${id}; run it on with: ${made.command}`);
    said.dataset.session = made.id;
    $("run-notes").append(said);
    const li = el("li");
    li.dataset.id = made.id;
    li.append(el("div", "id", made.id), el("div", "meta", `from ${id} after turn ${turn} · resumable`));
    li.addEventListener("click", () => show(made.id, li));
    $("session-list").prepend(li);
  }

  (mode === "sessions" || mode === "served" ? browse() : live()).catch((e) => setStatus("error: " + e.message, "failed"));
})();
