/* The lesson's mindmap, drawn by markmap's view (vendored in assets/vendor/).
 *
 * Each lesson page carries its mindmap twice: as markmap data in
 * <script type="application/json" id="mindmap-data"> (with markmap's options
 * in #mindmap-options), and as the nested list in <nav id="outline">, which
 * needs no JavaScript. This script draws the data into <svg id="mindmap">
 * inside <div class="mindmap-box"> and adds a "Fit" button; markmap itself folds and unfolds a branch when its circle is
 * clicked, and zooms and pans. The outline is never touched: it stays the
 * readable fallback, and the text to print and to search.
 *
 * The box's data-state says what happened: "ready" once the mindmap is
 * drawn, "error" (with a message in the box) when it could not be.
 */
(function () {
  "use strict";

  function prefersDark() {
    var theme = document.documentElement.getAttribute("data-theme");
    if (theme === "dark" || theme === "light") return theme === "dark";
    return window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function followTheme(box) {
    var apply = function () { box.classList.toggle("markmap-dark", prefersDark()); };
    apply();
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", apply);
    new MutationObserver(apply).observe(document.documentElement,
      { attributes: true, attributeFilter: ["data-theme", "class"] });
  }

  function fail(box, svg, why) {
    box.setAttribute("data-state", "error");
    svg.style.display = "none";
    var note = document.createElement("p");
    note.className = "mindmap-error";
    note.textContent = "The mindmap could not be drawn (" + why + "). " +
      "The outline has the same content.";
    box.appendChild(note);
    if (window.console) window.console.error("mindmap: " + why);
  }

  function parse(text, what) {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(what + " is not valid JSON: " + error.message);
    }
  }

  /* The tree, and the lesson's markmap options: its front matter's `markmap:`
   * block, in <script type="application/json" id="mindmap-options"> (optional). */
  function readData() {
    var script = document.getElementById("mindmap-data");
    if (!script) throw new Error("the page has no #mindmap-data script");
    var data = parse(script.textContent, "#mindmap-data");
    if (!data || typeof data.content !== "string") {
      throw new Error("#mindmap-data is not markmap data: its root has no content");
    }
    var extra = document.getElementById("mindmap-options");
    var options = extra ? parse(extra.textContent, "#mindmap-options") : null;
    return { data: data, options: options || {} };
  }

  function fitButton(mm) {
    var tools = document.createElement("div");
    tools.className = "mindmap-tools";
    var fit = document.createElement("button");
    fit.type = "button";
    fit.className = "mindmap-fit";
    fit.textContent = "Fit";
    fit.title = "Zoom so that the whole mindmap is in view";
    fit.addEventListener("click", function () { mm.fit(); });
    tools.appendChild(fit);
    return tools;
  }

  function draw() {
    var svg = document.getElementById("mindmap");
    if (!svg) return;  // not a lesson page
    var box = svg.closest(".mindmap-box") || svg.parentNode;
    var read;
    try {
      read = readData();
    } catch (error) {
      fail(box, svg, error.message);
      return;
    }
    if (!window.d3 || !window.markmap || !window.markmap.Markmap) {
      fail(box, svg, "assets/vendor/d3.min.js or markmap-view.min.js did not load");
      return;
    }
    if (svg.getBoundingClientRect().height < 80) svg.style.height = "60vh";  // unstyled page
    followTheme(box);
    var still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    var options = Object.assign({ duration: 300, maxWidth: 320 },
      window.markmap.deriveOptions(read.options), still ? { duration: 0 } : {});
    var mm = window.markmap.Markmap.create(svg, options);
    box.insertBefore(fitButton(mm), box.firstChild);
    mm.setData(read.data).then(function () {
      return mm.fit();
    }).then(function () {
      box.setAttribute("data-state", "ready");
    }, function (error) {
      fail(box, svg, String(error && error.message || error));
    });
    window.gpulabMindmap = mm;
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
