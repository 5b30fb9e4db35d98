// Light and dark themes: the system's choice unless the reader picked one
// with the toggle; the pick is kept in localStorage. Runs in <head>, so the
// page is drawn in the right theme from the start.
(function () {
  "use strict";
  var KEY = "gpulab-book-theme";
  var root = document.documentElement;
  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }
  function store(theme) {
    try { localStorage.setItem(KEY, theme); } catch (e) { /* file:// may refuse */ }
  }
  var chosen = stored();
  if (chosen === "light" || chosen === "dark") {
    root.setAttribute("data-theme", chosen);
  }
  function current() {
    var set = root.getAttribute("data-theme");
    if (set) { return set; }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches
      ? "dark" : "light";
  }
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("theme-toggle");
    if (!button) { return; }
    button.hidden = false;
    function label() {
      var next = current() === "dark" ? "light" : "dark";
      button.setAttribute("aria-label", "switch to the " + next + " theme");
      button.title = "switch to the " + next + " theme";
    }
    label();
    button.addEventListener("click", function () {
      var next = current() === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      store(next);
      label();
      document.dispatchEvent(new CustomEvent("gpulab:theme", { detail: next }));
    });
  });
}());
