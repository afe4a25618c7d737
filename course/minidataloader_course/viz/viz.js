/* minidataloader_course.viz: helpers every static view shares (see _html.py). This file only
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
  // Paired inputs (a slider and a number box) share a name and are kept equal. A number
  // box holding what the view cannot draw is refused: explain(name, value, current) says
  // why (or "" to accept), next to the box, and the view keeps the last settings it drew.
  // An empty box is someone typing: neither taken nor refused.
  viz.bindControls = function (root, params, onChange, explain) {
    const inputs = Array.from(root.querySelectorAll("[data-param]"));
    const current = Object.assign({}, params);
    function read(input) {
      if (input.type === "checkbox") return input.checked;
      if (input.tagName === "SELECT") {
        return input.value === "true" ? true : input.value === "false" ? false : input.value;
      }
      return Number(input.value);
    }
    function refuse(input, why) {  // show why the box refuses its value ("": it does not)
      const control = input.closest(".mdl-control");
      let note = control && control.querySelector(".mdl-why");
      if (!note && why && control) {
        note = document.createElement("span");
        note.className = "mdl-why";
        note.setAttribute("role", "alert");
        control.appendChild(note);
      }
      if (note) {
        note.textContent = why;
        note.hidden = !why;
      }
      input.classList.toggle("mdl-refused", Boolean(why));
      input.setAttribute("aria-invalid", why ? "true" : "false");
    }
    function refusal(input, value) {
      if (explain) return explain(input.dataset.param, value, current);
      const inRange = value >= Number(input.min) && value <= Number(input.max);
      return Number.isInteger(value) && inRange ? "" : "out of range";
    }
    function changed(event) {
      const input = event.target;
      if (input.type === "number" && input.value === "") return;
      const value = read(input);
      if (input.type === "number") {
        const why = refusal(input, value);
        refuse(input, explain ? why : "");
        if (why) return;
      }
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
          if (input.type === "number") refuse(input, "");
        }
      },
      params: () => Object.assign({}, current),
    };
  };
})();
