// Per-item browser of report.html. Reads the items from the JSON data block and
// builds rows with textContent only: model output is never parsed as HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("items-data").textContent);
  var capSel = document.getElementById("f-cap");
  var outSel = document.getElementById("f-outcome");
  var search = document.getElementById("f-search");
  var body = document.getElementById("items-body");
  var more = document.getElementById("items-more");
  var count = document.getElementById("items-count");
  var PAGE = 50;
  var filtered = [];
  var shown = 0;

  var caps = [];
  data.forEach(function (it) { if (caps.indexOf(it.capability) < 0) { caps.push(it.capability); } });
  caps.sort().forEach(function (c) {
    var o = document.createElement("option");
    o.value = c;
    o.textContent = c;
    capSel.appendChild(o);
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  function fmt(v) {
    return v === null || v === undefined ? "—" : (Math.round(v * 1000) / 1000).toString();
  }

  function output(text, scores, reason) {
    var td = el("td");
    td.appendChild(el("pre", null, text));
    td.appendChild(el("div", "muted", scores));
    if (reason) { td.appendChild(el("div", "reason", reason)); }
    return td;
  }

  function row(it) {
    var tr = el("tr", "item " + it.outcome);
    var first = el("td");
    first.appendChild(el("div", "item-id", it.id));
    first.appendChild(el("span", "badge " + it.outcome, it.outcome));
    first.appendChild(el("div", "muted", it.metric + ": " + fmt(it.base_value) + " → " + fmt(it.adapter_value)));
    if (!it.changed) { first.appendChild(el("div", "muted", "same output")); }
    tr.appendChild(first);
    var p = el("td");
    p.appendChild(el("pre", null, it.prompt));
    tr.appendChild(p);
    tr.appendChild(output(it.base_text, it.base_scores, it.base_reason));
    tr.appendChild(output(it.adapter_text, it.adapter_scores, it.adapter_reason));
    return tr;
  }

  function page() {
    var end = Math.min(shown + PAGE, filtered.length);
    var frag = document.createDocumentFragment();
    for (var i = shown; i < end; i++) { frag.appendChild(row(filtered[i])); }
    body.appendChild(frag);
    shown = end;
    more.hidden = shown >= filtered.length;
    more.textContent = "show " + Math.min(PAGE, filtered.length - shown) + " more (" +
      (filtered.length - shown) + " left)";
    count.textContent = "showing " + shown + " of " + filtered.length + " matching items (" + data.length + " in all)";
  }

  function apply() {
    var cap = capSel.value, out = outSel.value, q = search.value.toLowerCase();
    filtered = data.filter(function (it) {
      if (cap && it.capability !== cap) { return false; }
      if (out === "changed" ? !it.changed : (out && it.outcome !== out)) { return false; }
      if (q && (it.id + "\n" + it.prompt + "\n" + it.base_text + "\n" + it.adapter_text).toLowerCase().indexOf(q) < 0) {
        return false;
      }
      return true;
    });
    shown = 0;
    body.replaceChildren();
    page();
  }

  capSel.addEventListener("change", apply);
  outSel.addEventListener("change", apply);
  search.addEventListener("input", apply);
  more.addEventListener("click", page);
  document.getElementById("item-browser").hidden = false;
  apply();
})();
