/* The queue-flow view's static face (queueflow.py). renderState is a port of render_state
   and must return the same string (tests/viz/test_queueflow_browser.py compares them); the
   rest plays a recorded epoch: the time slider, play/pause, stepping from event to event,
   clicking the timeline, switching between recorded settings. Times are whole microseconds
   from the start of the epoch, as view_data gives them. */
(function () {
  "use strict";
  const viz = window.minidataloader.viz;

  const PALETTE = ["#8ecae6", "#ffb570", "#9bd38f", "#f4a3a8", "#c9b3e6",
    "#e6cf7a", "#8fd6cf", "#f7b6d9", "#b8c480", "#d7b49e"];  // explorer.PALETTE
  const MAIN_PLACES = ["step", "stage", "fetch:main", "wait", "finish"];
  const MAIN_WORDS = {
    step: "training step on", stage: "staging copy of", "fetch:main": "fetching",
    wait: "waiting for data; next comes", finish: "ending the epoch", idle: "between steps",
  };

  // places_at
  function placesAt(data, t) {
    const here = {};
    for (const [place, batch, start, end] of data.spans) {
      if (start <= t && t < end) (here[place] = here[place] || []).push(batch);
    }
    return here;
  }

  // _ms
  function ms(us) {
    const tenths = Math.floor((us + 50) / 100);
    return `${Math.floor(tenths / 10)}.${tenths % 10}`;
  }

  // _chips
  function chips(batches) {
    if (!batches.length) return '<span class="mdl-qf-none">–</span>';
    return batches.filter((b) => b !== null).map((b) => `<span class="mdl-qf-chip" data-batch="${b}" ` +
      `style="background:${PALETTE[b % PALETTE.length]}">${b}</span>`).join("");
  }

  // _row
  function row(name, place, batches, note) {
    const extra = note ? `<span class="mdl-qf-note">${note}</span>` : "";
    return `<div class="mdl-qf-row"><span class="mdl-qf-name">${name}</span>` +
      `<span class="mdl-qf-items" data-place="${place}">${chips(batches)}</span>${extra}</div>`;
  }

  // _mark_row
  function markRow(data, t) {
    const passed = data.marks.filter((mark) => mark[1] <= t);
    if (!passed.length) {
      return '<div class="mdl-qf-row mdl-qf-mark" data-mark="none"><span class="mdl-qf-name">' +
        'checkpoint</span><span class="mdl-qf-note">none yet</span></div>';
    }
    const [kind, at, yielded, flying] = passed[passed.length - 1];
    const when = yielded === null ? "between epochs" : `after ${yielded} yielded`;
    const words = kind === "checkpoint" ? "in flight, fetched again on resume:" : "dispatched again:";
    return `<div class="mdl-qf-row mdl-qf-mark" data-mark="${kind}"><span class="mdl-qf-name">` +
      `${kind === "checkpoint" ? "checkpoint" : "resume"}</span><span class="mdl-qf-note">` +
      `at ${ms(at)} ms, ${when}; ${words}</span><span class="mdl-qf-items">${chips(flying)}` +
      "</span></div>";
  }

  // render_state
  function renderState(data, t) {
    const here = placesAt(data, t);
    const get = (place) => here[place] || [];
    const left = data.workers.map((w) => `<div class="mdl-qf-row"><span class="mdl-qf-name">worker ${w}</span>` +
      `<span class="mdl-qf-items mdl-qf-queue" data-place="queued:${w}">${chips(get(`queued:${w}`))}` +
      '</span><span class="mdl-qf-arrow">→</span><span class="mdl-qf-items mdl-qf-busy" ' +
      `data-place="fetch:${w}">${chips(get(`fetch:${w}`))}</span></div>`);
    const right = [];
    if (data.workers.length) right.push(row("result queue", "result", get("result")));
    if (data.pin) {
      right.push(row("pin thread", "pinning", get("pinning"), "pinning"));
      right.push(row("pinned", "pinned", get("pinned"), "waiting for the loop"));
    }
    if (data.workers.length) right.push(row("reorder buffer", "reorder", get("reorder")));
    const doing = MAIN_PLACES.find((place) => get(place).length) || "idle";
    right.push('<div class="mdl-qf-row"><span class="mdl-qf-name">main loop</span>' +
      `<span class="mdl-qf-doing" data-main="${doing}">${MAIN_WORDS[doing]} </span>` +
      `<span class="mdl-qf-items" data-place="${doing}">${chips(get(doing))}</span></div>`);
    if (data.copy) right.push(row("H2D copy", "copy", get("copy"), data.copy));
    const head = `<div class="mdl-qf-clock" data-t="${t}">at <b>${ms(t)} ms</b> of ${ms(data.end)} ms</div>`;
    const workers = left.length ? left.join("")
      : '<div class="mdl-qf-row mdl-qf-note">no workers: the main loop fetches</div>';
    const marks = data.marks.length ? markRow(data, t) : "";
    return `${head}<div class="mdl-qf-columns"><div class="mdl-qf-box"><div class="mdl-qf-head">` +
      `index queue → worker process</div>${workers}</div><div class="mdl-qf-box">` +
      `<div class="mdl-qf-head">main process</div>${right.join("")}</div></div>${marks}`;
  }

  // tick_step
  function tickStep(scale) {
    let step = 1;
    while (scale / step > 10) step = String(step)[0] === "2" ? step * 5 / 2 : step * 2;
    return step;
  }

  // axis_end: a recording's own time axis (NOTE [ A time axis per recording ])
  function axisEnd(end) {
    end = Math.max(end, 1);
    const step = tickStep(end);
    return Math.ceil(end / step) * step;
  }

  // Every moment something moves: where the step buttons stop.
  function changeTimes(data) {
    const times = new Set([0, data.end]);
    for (const span of data.spans) { times.add(span[2]); times.add(span[3]); }
    for (const mark of data.marks) times.add(mark[1]);
    return Array.from(times).sort((a, b) => a - b);
  }

  // ------------------------------------------------------------ the player

  // queue_flow_html emits the panels, the player and the first state, and calls this
  function mountQueueFlow(rootId, config) {
    const root = document.getElementById(rootId);
    if (!root || root.dataset.mounted) return;
    root.dataset.mounted = "true";
    const slider = root.querySelector(".mdl-qf-time");
    const state = root.querySelector(".mdl-qf-state");
    const playButton = root.querySelector('[data-role="play"]');
    const speed = root.querySelector('[data-role="speed"]');
    const panels = Array.from(root.querySelectorAll(".mdl-qf-trace"));
    const [left, plot] = config.plot;
    let index = 0, data = config.traces[0], times = changeTimes(data), scale = axisEnd(data.end);
    let t = config.start, playing = false, last = null;

    function show(time) {
      t = Math.max(0, Math.min(time, data.end));
      const shown = Math.floor(t);
      slider.value = String(shown);
      state.innerHTML = renderState(data, shown);
      const x = (left + shown * plot / scale).toFixed(1);
      const cursor = panels[index].querySelector(".mdl-qf-cursor");
      if (cursor) { cursor.setAttribute("x1", x); cursor.setAttribute("x2", x); }
      root.dataset.t = String(shown);  // what is shown now, for tests and readers' tools
      root.dataset.trace = String(index);
    }
    function setPlaying(on) {
      playing = on;
      last = null;
      playButton.textContent = on ? "❚❚ pause" : "▶ play";
      playButton.setAttribute("aria-label", on ? "pause" : "play");
      if (on) requestAnimationFrame(frame);
    }
    function frame(now) {
      if (!playing) return;
      if (last !== null) {
        const next = t + (now - last) * 1000 * Number(speed.value);
        show(next);
        if (next >= data.end) { setPlaying(false); return; }
      }
      last = now;
      requestAnimationFrame(frame);
    }
    function stepTo(direction) {
      setPlaying(false);
      const now = Math.floor(t);
      const target = direction > 0 ? times.find((x) => x > now)
        : times.filter((x) => x < now).pop();
      show(target === undefined ? (direction > 0 ? data.end : 0) : target);
    }

    playButton.addEventListener("click", () => {
      if (!playing && t >= data.end) show(0);
      setPlaying(!playing);
    });
    root.querySelector('[data-role="forward"]').addEventListener("click", () => stepTo(1));
    root.querySelector('[data-role="back"]').addEventListener("click", () => stepTo(-1));
    slider.addEventListener("input", () => show(Number(slider.value)));
    slider.addEventListener("keydown", (event) => {  // arrows go from event to event, not by 1 µs
      if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
        event.preventDefault();
        stepTo(event.key === "ArrowRight" ? 1 : -1);
      }
    });
    for (const panel of panels) {
      const svg = panel.querySelector("svg");
      svg.addEventListener("click", (event) => {  // click the timeline: go to that moment
        const box = svg.getBoundingClientRect();
        const x = (event.clientX - box.left) * svg.viewBox.baseVal.width / box.width;
        show(Math.round((x - left) * scale / plot));
      });
    }
    for (const radio of root.querySelectorAll(".mdl-qf-configs input")) {
      radio.addEventListener("change", () => {
        index = Number(radio.value);
        data = config.traces[index];
        times = changeTimes(data);
        scale = axisEnd(data.end);
        panels.forEach((panel, i) => { panel.hidden = i !== index; });
        slider.max = String(data.end);
        show(t);
      });
    }
    show(t);
  }

  viz.queueflow = { placesAt, markRow, renderState, changeTimes, tickStep, axisEnd };
  viz.mountQueueFlow = mountQueueFlow;
})();
