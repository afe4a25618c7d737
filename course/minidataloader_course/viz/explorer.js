/* The epoch-arithmetic explorer's static face. Each function is a port of its Python twin
   (named in the comment above it) and must return the same value, string for string:
   tests/viz/test_explorer_browser.py runs both over a grid. Field and parameter names stay
   Python's (snake_case) so that results compare as they are. */
(function () {
  "use strict";
  const viz = window.minidataloader.viz;
  const { escape, floorDiv, ceilDiv, pyBool } = viz;

  const SHARDINGS = ["stride", "blocks", "none"];
  const DEFAULTS = {
    dataset_size: 10, batch_size: 3, drop_last: false, epochs: 1, shuffle: false, seed: 0,
    show_epoch: 1, replicas: 1, sampler_drop_last: false, iterable: false, num_workers: 0,
    sharding: "stride",
  };

  // ------------------------------------------------------------ course/minidataloader_course/viz/arithmetic.py

  // worker_shard, as [start, stop, step]
  function workerShard(n, worker, workers, sharding) {
    if (sharding === "none") return [0, n, 1];
    if (sharding === "stride") return [Math.min(worker, n), n, workers];
    const block = ceilDiv(n, workers);
    return [Math.min(worker * block, n), Math.min((worker + 1) * block, n), 1];
  }
  const rangeLength = ([start, stop, step]) => (stop > start ? ceilDiv(stop - start, step) : 0);
  const rangeItems = ([start, stop, step]) => {
    const items = [];
    for (let i = start; i < stop; i += step) items.push(i);
    return items;
  };

  // _batches: [number of batches, size of the partial batch or 0, samples dropped]
  function batches(samples, batchSize, dropLast) {
    const full = floorDiv(samples, batchSize), rest = samples % batchSize;
    if (dropLast) return [full, 0, rest];
    return [full + (rest > 0 ? 1 : 0), rest, 0];
  }

  // epoch_arithmetic (keyword arguments as one object; the result has EpochArithmetic's fields)
  function epochArithmetic(args) {
    const a = Object.assign({ drop_last: false, epochs: 1, replicas: 1, sampler_drop_last: false,
      iterable: false, num_workers: 0, sharding: "stride" }, args);
    const n = a.dataset_size, b = a.batch_size;
    for (const [name, low] of [["dataset_size", 0], ["batch_size", 1], ["epochs", 0],
      ["replicas", 1], ["num_workers", 0]]) {
      if (!Number.isInteger(a[name]) || a[name] < low) {
        throw new RangeError(`${name} should be an integer >= ${low}, but got ${a[name]}`);
      }
    }
    if (!SHARDINGS.includes(a.sharding)) throw new RangeError(`unknown sharding ${a.sharding}`);
    if (a.iterable && a.replicas > 1) throw new RangeError("an IterableDataset takes replicas=1");

    let padded = 0, duplicated = 0, samplerCut = 0, streams;
    if (a.iterable) {
      streams = a.num_workers === 0 ? [n] : Array.from({ length: a.num_workers },
        (_, w) => rangeLength(workerShard(n, w, a.num_workers, a.sharding)));
      if (a.num_workers && a.sharding === "none") duplicated = (a.num_workers - 1) * n;
    } else {
      const share = a.sampler_drop_last ? floorDiv(n, a.replicas) : ceilDiv(n, a.replicas);
      streams = Array(a.replicas).fill(share);
      if (a.sampler_drop_last) samplerCut = n - share * a.replicas;
      else padded = share * a.replicas - n;
    }
    const perStream = streams.map((samples) => batches(samples, b, a.drop_last));
    const loaderDropped = perStream.reduce((sum, s) => sum + s[2], 0);
    let iterations, partial, last, reported;
    if (a.iterable) {
      iterations = perStream.reduce((sum, s) => sum + s[0], 0);
      const byArrival = perStream.map((_, w) => w)
        .sort((v, w) => perStream[v][0] - perStream[w][0] || v - w);
      partial = byArrival.filter((w) => perStream[w][1]).map((w) => perStream[w][1]);
      const [count, rest] = perStream[byArrival[byArrival.length - 1]];
      last = rest || (count ? b : 0);
      reported = batches(n, b, a.drop_last)[0];
    } else {
      const [count, rest] = perStream[0];
      iterations = count;
      partial = rest ? [rest] : [];
      last = rest || (count ? b : 0);
      reported = iterations;
    }
    return {
      dataset_size: n, batch_size: b, drop_last: !!a.drop_last, epochs: a.epochs,
      iterations_per_epoch: iterations, last_batch_size: last,
      samples_dropped: samplerCut + loaderDropped, total_iterations: iterations * a.epochs,
      replicas: a.replicas, sampler_drop_last: !!a.sampler_drop_last, iterable: !!a.iterable,
      num_workers: a.num_workers, sharding: a.sharding, samples_per_stream: streams,
      partial_batches: partial, samples_padded: padded, samples_duplicated: duplicated,
      samples_yielded: streams.reduce((sum, s) => sum + s, 0) - loaderDropped,
      reported_len: reported, len_is_estimate: !!a.iterable,
      len_warning: !!a.iterable && iterations > n,
    };
  }

  // ------------------------------------------------------------ torch.randperm on the CPU
  // torch.Generator().manual_seed(seed) seeds a 32-bit Mersenne Twister (MT19937) with the
  // seed's low 32 bits; randperm(n) swaps r[i] with r[i + random() % (n - i)] for i < n - 1.
  // Exact for n < 2**32 / 20, beyond which torch switches to 64-bit draws.
  function Generator(seed) {
    const mt = new Uint32Array(624);
    mt[0] = seed % 4294967296;
    for (let i = 1; i < 624; i++) {
      mt[i] = Math.imul(1812433253, mt[i - 1] ^ (mt[i - 1] >>> 30)) + i;
    }
    let next = 624;
    this.random = function () {
      if (next >= 624) {
        for (let k = 0; k < 624; k++) {
          const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
          mt[k] = mt[(k + 397) % 624] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
        }
        next = 0;
      }
      let y = mt[next++];
      y ^= y >>> 11;
      y ^= (y << 7) & 0x9d2c5680;
      y ^= (y << 15) & 0xefc60000;
      y ^= y >>> 18;
      return y >>> 0;
    };
    // torch.empty((), dtype=torch.int64).random_(generator=g) takes two 32-bit draws
    this.randomInt64 = function () { this.random(); this.random(); };
  }
  function randperm(n, generator) {
    const r = Array.from({ length: n }, (_, i) => i);
    for (let i = 0; i < n - 1; i++) {
      const z = generator.random() % (n - i);
      [r[i], r[z + i]] = [r[z + i], r[i]];
    }
    return r;
  }

  // ------------------------------------------------------------ course/minidataloader_course/viz/explorer.py

  // epoch_order
  function epochOrder(n, { shuffle = false, seed = 0, epoch = 0, replicas = 1 } = {}) {
    if (!shuffle || n === 0) return Array.from({ length: n }, (_, i) => i);
    if (replicas > 1) return randperm(n, new Generator(seed + epoch));
    const generator = new Generator(seed);
    let order;
    for (let e = 0; e <= epoch; e++) {
      generator.randomInt64();
      order = randperm(n, generator);
      randperm(n, generator);
    }
    return order;
  }

  // _batched
  function batched(indices, batchSize, dropLast, steps, paddedFrom = null) {
    const kept = dropLast ? floorDiv(indices.length, batchSize) * batchSize : indices.length;
    return indices.map((index, i) => ({
      index, step: i < kept ? steps[floorDiv(i, batchSize)] : null,
      padded: paddedFrom !== null && i >= paddedFrom,
    }));
  }

  // epoch_layout (keyword arguments as one object)
  function epochLayout(args) {
    const p = Object.assign({ drop_last: false, replicas: 1, sampler_drop_last: false,
      shuffle: false, seed: 0, iterable: false, num_workers: 0, sharding: "stride", epoch: 0 }, args);
    if (p.iterable && p.shuffle) throw new RangeError("the loader cannot shuffle an IterableDataset");
    const n = p.dataset_size, b = p.batch_size, w = p.num_workers;
    const a = epochArithmetic({ dataset_size: n, batch_size: b, drop_last: p.drop_last,
      replicas: p.replicas, sampler_drop_last: p.sampler_drop_last, iterable: p.iterable,
      num_workers: w, sharding: p.sharding });
    const result = (lanes) => ({ arithmetic: a, lanes, epoch: p.epoch });
    if (p.iterable) {
      const shards = w === 0 ? [[0, n, 1]] : Array.from({ length: w },
        (_, k) => workerShard(n, k, w, p.sharding));
      const counts = shards.map((shard) => batches(rangeLength(shard), b, p.drop_last)[0]);
      const arrivals = shards.map(() => []);
      let step = 0;
      for (let turn = 0; turn < Math.max(0, ...counts); turn++) {
        counts.forEach((count, k) => { if (turn < count) arrivals[k].push(step++); });
      }
      return result(shards.map((shard, k) => ({
        label: w === 0 ? "loader" : `worker ${k}`,
        slots: batched(rangeItems(shard), b, p.drop_last, arrivals[k]),
      })));
    }
    const order = epochOrder(n, p);
    const steps = Array.from({ length: a.iterations_per_epoch }, (_, i) => i);
    if (p.replicas === 1) return result([{ label: "loader", slots: batched(order, b, p.drop_last, steps) }]);
    const total = a.samples_per_stream[0] * p.replicas;
    const lanes = [];
    for (let rank = 0; rank < p.replicas; rank++) {
      const positions = rangeItems([rank, total, p.replicas]);
      const indices = positions.map((pos) => order[pos % n]);
      const firstPadded = positions.filter((pos) => pos < n).length;
      const slots = batched(indices, b, p.drop_last, steps, firstPadded);
      for (let pos = total + rank; pos < n; pos += p.replicas) {
        slots.push({ index: order[pos], step: null, padded: false });
      }
      lanes.push({ label: `rank ${rank}`, slots });
    }
    return result(lanes);
  }

  const PALETTE = ["#8ecae6", "#ffb570", "#9bd38f", "#f4a3a8", "#c9b3e6",
    "#e6cf7a", "#8fd6cf", "#f7b6d9", "#b8c480", "#d7b49e"];
  const INK = "#1f2328", DROPPED_FILL = "#eceff3", DROPPED_INK = "#8c959f";
  const WIDTH = 640, LABEL_WIDTH = 72, GRID_AREA_HEIGHT = 300, MAX_DRAWN_SLOTS = 4000;
  const LEGEND = [["tick", "start of a batch"], ["dashed", "padded repeat (DistributedSampler)"],
    ["dropped", "dropped"], ["corner", "delivered more than once"]];
  const SHARDING_WORDS = {
    stride: "worker w reads samples w, w + W, w + 2W, ...",
    blocks: "worker w reads one contiguous block of ceil(N / W) samples",
    none: "not sharded: every worker reads the whole dataset",
  };

  // effective_params
  function effectiveParams(params) {
    const p = Object.assign({}, DEFAULTS, params);
    if (p.iterable) Object.assign(p, { shuffle: false, replicas: 1 });
    if (p.replicas === 1) p.sampler_drop_last = false;
    p.show_epoch = Math.max(1, Math.min(p.show_epoch, p.epochs));
    return p;
  }

  // plural (viz/_settings.py)
  const plural = (n, one, many = "") => (n === 1 ? `${n} ${one}`
    : `${n} ${many || one + (one.endsWith("ch") ? "es" : "s")}`);

  // _numbers
  function numbers(a) {
    const rank = a.replicas > 1 ? " (each rank)" : "";
    const full = a.iterations_per_epoch - a.partial_batches.length;
    const parts = [`${plural(full, "full batch", "full batches")} of ${a.batch_size}`];
    if (a.partial_batches.length === 1) {
      parts.push(`1 partial batch of ${a.partial_batches[0]}`);
    } else if (a.partial_batches.length) {
      parts.push(`${a.partial_batches.length} partial batches (${a.partial_batches.join(", ")}), one per worker that ends short`);
    }
    if (a.drop_last && a.samples_per_stream.some((n) => n % a.batch_size)) {
      parts.push(a.iterable && a.num_workers ? "incomplete batches dropped" : "the incomplete batch dropped");
    }
    const rows = [[`iterations per epoch${rank}`, String(a.iterations_per_epoch), parts.join(", ")],
      ["last batch", plural(a.last_batch_size, "sample"),
        a.last_batch_size === 0 || a.last_batch_size === a.batch_size ? "" : "smaller than batch_size"]];
    if (a.replicas > 1) {
      const rule = a.sampler_drop_last ? "floor" : "ceil";
      rows.push(["samples per rank", String(a.samples_per_stream[0]),
        `${rule}(${a.dataset_size} / ${a.replicas}), the same on every rank`]);
    }
    if (a.iterable && a.num_workers) {
      rows.push(["samples per worker", a.samples_per_stream.join(", "), SHARDING_WORDS[a.sharding]]);
    }
    rows.push(["dropped per epoch", plural(a.samples_dropped, "sample"),
      a.samples_dropped ? "not in any batch this epoch" : ""]);
    if (a.replicas > 1 && !a.sampler_drop_last) {
      rows.push(["padded per epoch", plural(a.samples_padded, "sample"), a.samples_padded
        ? "repeats of the first samples in the order, so that every rank gets as many" : ""]);
    }
    if (a.samples_duplicated) {
      rows.push(["duplicated per epoch", plural(a.samples_duplicated, "sample"),
        `every sample arrives ${a.num_workers} times`]);
    }
    let note;
    if (!a.len_is_estimate) {
      note = "exact: the sampler's length divided into batches";
    } else {
      const off = a.reported_len - a.iterations_per_epoch;
      note = "an estimate: len(dataset) / batch_size, blind to the workers; " + (off === 0
        ? "right here"
        : `here the epoch has ${plural(Math.abs(off), "batch", "batches")} ` + (off < 0 ? "more" : "fewer"));
      if (a.len_warning) note += "; torch warns mid-epoch if len() was called";
    }
    rows.push(["len(loader)", String(a.reported_len), note]);
    rows.push([`iterations in ${plural(a.epochs, "epoch")}`, String(a.total_iterations),
      `${a.iterations_per_epoch} \u00d7 ${a.epochs}`]);
    return rows;
  }

  // _code
  function code(p) {
    const args = `batch_size=${p.batch_size}`;
    const workers = p.num_workers ? `, num_workers=${p.num_workers}` : "";
    const drop = `, drop_last=${pyBool(p.drop_last)}`;
    if (p.iterable) {
      const w = p.num_workers;
      const lines = [`loader = DataLoader(stream, ${args}${workers}${drop})`];
      if (w && p.sharding === "none") {
        lines.push(`# stream.__iter__ ignores get_worker_info(): all ${w} workers yield every sample`);
      } else if (w && p.sharding === "stride") {
        lines.push(`# in worker i, stream.__iter__ yields samples i, i + ${w}, i + ${2 * w}, ...`);
      } else if (w) {
        lines.push(`# in worker i, stream.__iter__ yields block i of ceil(len / ${w}) samples`);
      }
      return lines.join("\n");
    }
    if (p.replicas > 1) {
      return `sampler = DistributedSampler(dataset, num_replicas=${p.replicas}, rank=rank,\n` +
        `                             shuffle=${pyBool(p.shuffle)}, seed=${p.seed}, ` +
        `drop_last=${pyBool(p.sampler_drop_last)})\n` +
        `loader = DataLoader(dataset, ${args}, sampler=sampler${workers}${drop})\n` +
        `sampler.set_epoch(${p.show_epoch - 1})  # before epoch ${p.show_epoch}`;
    }
    if (p.shuffle) {
      return `loader = DataLoader(dataset, ${args}, shuffle=True${workers}${drop},\n` +
        `                    generator=torch.Generator().manual_seed(${p.seed}))`;
    }
    return `loader = DataLoader(dataset, ${args}${workers}${drop})`;
  }

  // _text
  const text = (x, y, body, cls = "", extra = "") =>
    `<text x="${x}" y="${y}"${cls ? ` class="${cls}"` : ""}${extra}>${body}</text>`;

  // _cell
  function cell(x, y, s, fill, label, title, { dashed = false, dropped = false, tick = false, corner = false } = {}) {
    const d = s - 2;
    const stroke = dashed ? ` stroke="${INK}" stroke-width="1.5" stroke-dasharray="3 2"`
      : dropped ? ` stroke="${DROPPED_INK}"` : "";
    const parts = [`<g><title>${escape(title)}</title>`,
      `<rect x="${x + 1}" y="${y + 1}" width="${d}" height="${d}" rx="2" fill="${fill}"${stroke}/>`];
    if (dropped) parts.push(`<path d="M${x + 3} ${y + 3}L${x + s - 3} ${y + s - 3}" stroke="${DROPPED_INK}"/>`);
    if (tick) parts.push(`<rect x="${x}" y="${y + 1}" width="2" height="${d}" fill="${INK}"/>`);
    if (corner) parts.push(`<path d="M${x + s - 8} ${y + 1}H${x + s - 1}V${y + 8}Z" fill="${INK}"/>`);
    const size = s >= 26 ? 11 : s >= 20 ? 10 : 9;
    if (s >= 16 && label.length * size * 6 <= (s - 3) * 10) {
      const ink = dropped ? DROPPED_INK : INK;
      parts.push(text(x + floorDiv(s, 2), y + floorDiv(s, 2) + floorDiv(size * 35, 100), label, "mdl-cell",
        ` font-size="${size}" fill="${ink}" text-anchor="middle"`));
    }
    parts.push("</g>");
    return parts.join("");
  }

  // _svg
  function svg(layout, showEpoch) {
    const a = layout.arithmetic, lanes = layout.lanes, n = a.dataset_size;
    const total = n + lanes.reduce((sum, lane) => sum + lane.slots.length, 0);
    if (total > MAX_DRAWN_SLOTS) {
      return `<p class="mdl-muted">${total} cells are too many to draw; the numbers above still hold.</p>`;
    }
    const grid = WIDTH - LABEL_WIDTH;
    const s = Math.max(7, Math.min(32, Math.floor(Math.sqrt(grid * GRID_AREA_HEIGHT / Math.max(total, 1)))));
    const cols = floorDiv(grid, s);
    const delivered = Array.from({ length: n }, () => []);
    for (const lane of lanes) {
      for (const slot of lane.slots) {
        if (slot.step !== null) delivered[slot.index].push([slot.step, lane.label]);
      }
    }
    const out = [];
    const drawn = new Set();  // the marks used, for the legend
    let y = 0;
    out.push(text(0, y + 14, '<tspan font-weight="600">The dataset</tspan> in index order \u2014 ' +
      "number and colour: the step (batch) that delivers it", "mdl-heading"));
    y += 24;
    out.push(text(0, y + floorDiv(s, 2) + 4, "dataset", "mdl-lane"));
    for (let i = 0; i < n; i++) {
      const x = LABEL_WIDTH + (i % cols) * s, yy = y + floorDiv(i, cols) * s;
      if (!delivered[i].length) {
        drawn.add("dropped");
        out.push(cell(x, yy, s, DROPPED_FILL, "", `sample ${i}: dropped, not delivered this epoch`, { dropped: true }));
        continue;
      }
      const first = Math.min(...delivered[i].map(([step]) => step));
      if (delivered[i].length > 1) drawn.add("corner");
      const where = delivered[i].map(([step, label]) => `step ${step + 1}` + (lanes.length > 1 ? ` on ${label}` : "")).join(", ");
      out.push(cell(x, yy, s, PALETTE[first % PALETTE.length], String(first + 1),
        `sample ${i}: ${where}`, { corner: delivered[i].length > 1 }));
    }
    y += ceilDiv(n, cols) * s + 18;
    out.push(text(0, y + 14, `<tspan font-weight="600">Epoch ${showEpoch}</tspan> as the ` +
      "loader delivers it, row by row \u2014 number: the dataset index", "mdl-heading"));
    y += 24;
    for (const lane of lanes) {
      out.push(text(0, y + floorDiv(s, 2) + 4, lane.label, "mdl-lane"));
      let previous = null;
      lane.slots.forEach((slot, i) => {
        const x = LABEL_WIDTH + (i % cols) * s, yy = y + floorDiv(i, cols) * s;
        if (slot.step === null) {
          drawn.add("dropped");
          out.push(cell(x, yy, s, DROPPED_FILL, String(slot.index), `sample ${slot.index}: dropped`, { dropped: true }));
        } else {
          const what = slot.padded ? "a padded repeat of sample" : "sample";
          if (slot.padded) drawn.add("dashed");
          out.push(cell(x, yy, s, PALETTE[slot.step % PALETTE.length], String(slot.index),
            `${what} ${slot.index}: step ${slot.step + 1}`, { dashed: slot.padded, tick: slot.step !== previous }));
        }
        previous = slot.step;
      });
      y += Math.max(1, ceilDiv(lane.slots.length, cols)) * s + 6;
    }
    y += 8;
    const keys = LEGEND.filter(([kind]) => kind === "tick" || drawn.has(kind));
    if (a.iterations_per_epoch > PALETTE.length) keys.push(["colours", `colours repeat every ${PALETTE.length} steps`]);
    let x = 0;
    for (const [kind, words] of keys) {
      const icon = kind === "colours" ? 40 : 22;
      if (x && x + icon + words.length * 6 > WIDTH) { x = 0; y += 20; }
      if (kind === "colours") {
        for (let k = 0; k < 5; k++) {
          out.push(`<rect x="${x + 7 * k}" y="${y + 2}" width="6" height="12" rx="1" fill="${PALETTE[k]}"/>`);
        }
      } else {
        out.push(cell(x, y, 16, kind === "dropped" ? DROPPED_FILL : PALETTE[0], "", words,
          { dashed: kind === "dashed", dropped: kind === "dropped", tick: kind === "tick", corner: kind === "corner" }));
      }
      out.push(text(x + icon, y + 12, words, "mdl-key", ' font-size="11"'));
      x += icon + words.length * 6 + 22;
    }
    y += 22;
    return `<svg class="mdl-epoch-svg" viewBox="0 0 ${WIDTH} ${y}" width="${WIDTH}" height="${y}" ` +
      'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="13" ' +
      'fill="currentColor" role="img" aria-label="the batches of one epoch laid over the dataset">' +
      out.join("") + "</svg>";
  }

  // render_view
  function renderView(params) {
    const p = effectiveParams(params);
    const layout = epochLayout({ dataset_size: p.dataset_size, batch_size: p.batch_size,
      drop_last: p.drop_last, replicas: p.replicas, sampler_drop_last: p.sampler_drop_last,
      shuffle: p.shuffle, seed: p.seed, iterable: p.iterable, num_workers: p.num_workers,
      sharding: p.sharding, epoch: p.show_epoch - 1 });
    const a = epochArithmetic({ dataset_size: p.dataset_size, batch_size: p.batch_size,
      drop_last: p.drop_last, epochs: p.epochs, replicas: p.replicas,
      sampler_drop_last: p.sampler_drop_last, iterable: p.iterable, num_workers: p.num_workers,
      sharding: p.sharding });
    const rows = numbers(a).map(([q, v, note]) => `<tr data-quantity="${escape(q)}"><th>${escape(q)}</th>` +
      `<td class="mdl-value">${escape(v)}</td><td class="mdl-note">${escape(note)}</td></tr>`).join("");
    return `<table class="mdl-numbers">${rows}</table>` +
      `<div class="mdl-figure">${svg(layout, p.show_epoch)}</div>` +
      `<pre class="mdl-code"><code>${escape(code(p))}</code></pre>`;
  }

  // ------------------------------------------------------------ the page's controls

  const LIMITS = {
    dataset_size: [1, 2000], batch_size: [1, 256], epochs: [1, 20], seed: [0, 2 ** 31 - 1],
    show_epoch: [1, 20], replicas: [1, 8], num_workers: [0, 8],
  };
  const LABELS = {
    dataset_size: "samples N", batch_size: "batch_size", epochs: "epochs", seed: "seed",
    show_epoch: "show epoch", replicas: "replicas (ranks)", num_workers: "num_workers",
  };
  const TOO_LOW = {
    dataset_size: "a dataset needs at least one sample",
    batch_size: "a batch holds at least one sample",
    epochs: "a run has at least one epoch",
    seed: "a seed is not negative",
    show_epoch: "epochs are counted from 1",
    replicas: "there is at least one rank",
    num_workers: "0 workers means the main process loads; there are no fewer",
  };

  // refusal
  function refusal(name, value, epochs = LIMITS.epochs[1]) {
    const [low, high] = LIMITS[name], label = LABELS[name];
    if (!Number.isInteger(value)) return `${label} takes whole numbers`;
    if (value < low) return `${TOO_LOW[name]} (${label}: ${low} to ${high})`;
    if (name === "show_epoch" && value > epochs) {
      return `the run has only ${plural(epochs, "epoch")} (set epochs first)`;
    }
    if (value > high) return `${label} goes up to ${high} here`;
    return "";
  }

  // epoch_explorer_html emits the controls and calls this with their starting values
  function mountEpochExplorer(rootId, config) {
    const root = document.getElementById(rootId);
    if (!root || root.dataset.mounted) return;
    root.dataset.mounted = "true";
    const view = root.querySelector(".mdl-view");
    const controls = viz.bindControls(root, config.params, update,
      (name, value, current) => refusal(name, value, current.epochs));
    function update(params) {
      controls.setMax("show_epoch", params.epochs);
      const p = effectiveParams(controls.params());
      controls.disable("shuffle", p.iterable);
      controls.disable("seed", !p.shuffle);
      controls.disable("replicas", p.iterable);
      controls.disable("sampler_drop_last", p.replicas === 1);
      controls.disable("sharding", !(p.iterable && p.num_workers));
      view.innerHTML = renderView(p);
      root.dataset.params = JSON.stringify(p);  // what is drawn now, for tests and readers' tools
    }
    update(config.params);
  }

  viz.explorer = { epochArithmetic, workerShard, Generator, randperm, epochOrder, epochLayout,
    effectiveParams, renderView, refusal, DEFAULTS };
  viz.mountEpochExplorer = mountEpochExplorer;
})();
