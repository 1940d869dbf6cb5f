// llm4cov coverage report: sortable tables and a collapsible hierarchy (fixed code,
// no data from the run in it; it only reorders and hides rows of this page).
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-v");
    var text = v !== null ? v : cell.textContent.trim();
    var n = parseFloat(text);
    return isNaN(n) || !/^-?[\d.]/.test(text) ? text.toLowerCase() : n;
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    var down = th.getAttribute("aria-sort") === "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      var c = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0)
        : (typeof x === "number" ? -1 : 1);
      return down ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", down ? "descending" : "ascending");
  }
  document.querySelectorAll("table.sort").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.title = "sort";
      th.addEventListener("click", function () { sortBy(table, col, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter") { sortBy(table, col, th); }
      });
    });
  });
  document.querySelectorAll("table.tree button.fold").forEach(function (button) {
    button.addEventListener("click", function () {
      var row = button.closest("tr");
      var depth = +row.getAttribute("data-d");
      var hide = button.getAttribute("aria-expanded") === "true";
      button.setAttribute("aria-expanded", hide ? "false" : "true");
      button.textContent = hide ? "\u25b8" : "\u25be";
      for (var r = row.nextElementSibling; r && +r.getAttribute("data-d") > depth;
           r = r.nextElementSibling) {
        r.hidden = hide;
        var inner = r.querySelector("button.fold");
        if (inner) { inner.setAttribute("aria-expanded", hide ? "false" : "true");
                     inner.textContent = hide ? "\u25b8" : "\u25be"; }
      }
    });
  });
})();
