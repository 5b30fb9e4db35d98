// The search page: finds index entries whose title and text hold every word
// of the query. The index is the JSON in #search-index (no fetch, so it works
// from file://). Results are built as DOM nodes, never as HTML strings.
(function () {
  "use strict";
  var MAX_RESULTS = 100;
  var input = document.getElementById("search-input");
  var list = document.getElementById("search-results");
  var status = document.getElementById("search-status");
  var data = document.getElementById("search-index");
  if (!input || !list || !status || !data) { return; }
  var entries = JSON.parse(data.textContent || "[]");
  entries.forEach(function (e) {
    e.title = e.t.toLowerCase();
    e.all = (e.t + " " + e.x).toLowerCase();
  });

  function snippet(text, word) {
    if (!text) { return ""; }
    var at = Math.max(text.toLowerCase().indexOf(word), 0);
    var start = Math.max(0, at - 60);
    var end = Math.min(text.length, start + 180);
    return (start ? "…" : "") + text.slice(start, end) + (end < text.length ? "…" : "");
  }

  function search(query) {
    var words = query.toLowerCase().split(/\s+/).filter(Boolean);
    while (list.firstChild) { list.removeChild(list.firstChild); }
    if (!words.length) { status.textContent = ""; return; }
    var found = entries.filter(function (e) {
      return words.every(function (w) { return e.all.indexOf(w) >= 0; });
    });
    found.sort(function (a, b) {
      var at = words.every(function (w) { return a.title.indexOf(w) >= 0; }) ? 0 : 1;
      var bt = words.every(function (w) { return b.title.indexOf(w) >= 0; }) ? 0 : 1;
      return at - bt;
    });
    status.textContent = found.length === 0 ? "Nothing found for “" + query + "”."
      : found.length + " found" + (found.length > MAX_RESULTS ? ", the first " + MAX_RESULTS
      + " shown" : "") + ".";
    found.slice(0, MAX_RESULTS).forEach(function (e) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = e.u;
      link.textContent = e.t;
      var where = document.createElement("span");
      where.className = "dim";
      where.textContent = " · " + e.w;
      item.appendChild(link);
      item.appendChild(where);
      var text = snippet(e.x, words[0]);
      if (text) {
        var p = document.createElement("p");
        p.className = "snippet";
        p.textContent = text;
        item.appendChild(p);
      }
      list.appendChild(item);
    });
  }

  var query = new URLSearchParams(window.location.search).get("q") || "";
  input.value = query;
  search(query);
  input.addEventListener("input", function () { search(input.value); });
  document.getElementById("search-page-form").addEventListener("submit", function (event) {
    event.preventDefault();
    search(input.value);
  });
}());
