/* minidataloader.viz: helpers every static view shares (see _html.py). This file only
   defines functions, so a page that holds several views may run it several times. */
(function () {
  "use strict";
  const ns = (window.minidataloader = window.minidataloader || {});
  const viz = (ns.viz = ns.viz || {});

  // Python's html.escape, character for character, so that both sides emit equal strings.
  viz.escape = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;")
    .replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#x27;");

  // Integer division of non-negative integers, exact (no float rounding): a // b, ceil(a / b).
  viz.floorDiv = (a, b) => (a - (a % b)) / b;
  viz.ceilDiv = (a, b) => viz.floorDiv(a, b) + (a % b > 0 ? 1 : 0);

  viz.pyBool = (value) => (value ? "True" : "False");

  // The controls of a view: every <input>/<select> with data-param="name" under root.
  // Paired inputs (a slider and a number box) share a name and are kept equal; a value
  // outside [min, max] or not a number is ignored until the reader fixes it.
  viz.bindControls = function (root, params, onChange) {
    const inputs = Array.from(root.querySelectorAll("[data-param]"));
    const current = Object.assign({}, params);
    function read(input) {
      if (input.type === "checkbox") return input.checked;
      if (input.tagName === "SELECT") {
        return input.value === "true" ? true : input.value === "false" ? false : input.value;
      }
      const value = Number(input.value);
      if (input.value === "" || !Number.isInteger(value)) return undefined;
      if (value < Number(input.min) || value > Number(input.max)) return undefined;
      return value;
    }
    function changed(event) {
      const input = event.target;
      const value = read(input);
      if (value === undefined) return;
      current[input.dataset.param] = value;
      for (const twin of inputs) {
        if (twin !== input && twin.dataset.param === input.dataset.param) twin.value = String(value);
      }
      onChange(Object.assign({}, current));
    }
    for (const input of inputs) input.addEventListener(input.tagName === "SELECT" || input.type === "checkbox" ? "change" : "input", changed);
    return {
      // grey out a control whose setting has no effect in the current configuration
      disable(name, off) {
        for (const input of inputs) {
          if (input.dataset.param !== name) continue;
          input.disabled = off;
          const label = input.closest(".mdl-control");
          if (label) label.classList.toggle("mdl-disabled", off);
        }
      },
      setMax(name, max) {
        current[name] = Math.min(current[name], max);
        for (const input of inputs) {
          if (input.dataset.param !== name) continue;
          input.max = String(max);
          input.value = String(current[name]);
        }
      },
      params: () => Object.assign({}, current),
    };
  };
})();
