/* diagnose report: draws the charts and the flame graph from the JSON in #report-data.
 * Plain ES5, no dependencies but plotly.js (inlined before this script). Text the target
 * controls reaches the DOM only through textContent, and plotly only through esc(): plotly
 * reads its text as a small HTML dialect. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var CONFIG = {
    displaylogo: false,
    responsive: true,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d", "toggleSpikelines"]
  };
  var FONT = { family: "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size: 12 };
  var HIGHLIGHT = "#e64980";
  var DIMMED = "#e9ecef";

  /* plotly decodes &amp; &lt; &gt; (not &quot;); with no "<" left no tag can form */
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  /* --- charts ------------------------------------------------------------------------ */
  var charts = document.querySelectorAll("[data-chart]");
  for (var c = 0; c < charts.length; c++) {
    var spec = data.charts[charts[c].getAttribute("data-chart")];
    if (spec && spec.figure) {
      // responsive plots fill their element: give it the figure's height
      charts[c].style.height = spec.figure.layout.height + "px";
      Plotly.newPlot(charts[c], spec.figure.data, spec.figure.layout, CONFIG);
    }
  }

  /* --- flame graph ------------------------------------------------------------------- */
  var div = document.getElementById("flame-chart");
  var threadSelect = document.getElementById("flame-thread");
  var search = document.getElementById("flame-search");
  var matchOut = document.getElementById("flame-match");
  var linesBox = document.getElementById("flame-lines");
  var nativeBox = document.getElementById("flame-native");
  var MERGED = -2; // all threads in one tree; -1: all threads side by side; i: thread i
  var state = { view: null, thread: MERGED, tree: null, shown: null };

  /* The trees for the options chosen: the view's own (both options on, the default), or
   * the variant the page carries for them (absent where it would draw the same tree). */
  function chosen(fv) {
    var key = (linesBox.checked ? "1" : "0") + (nativeBox.checked ? "1" : "0");
    return (fv.variants && fv.variants[key]) || fv;
  }

  /* The nodes of one view, restricted to one thread (-1: all). Nodes above the threads
   * (the root, wait classes) keep only the weight of what is shown below them. */
  function subtree(tree, thread) {
    var n = tree.parent.length;
    var keep = new Array(n);
    var total = tree.value.slice();
    var i;
    for (i = 0; i < n; i++) {
      keep[i] = thread < 0 || tree.thread[i] === thread || tree.thread[i] === -1;
    }
    if (thread >= 0) {
      // children come after their parents: one backward pass sums kept weight upwards
      for (i = 0; i < n; i++) {
        if (tree.thread[i] === -1) total[i] = 0;
      }
      for (i = n - 1; i > 0; i--) {
        if (keep[i] && tree.thread[tree.parent[i]] === -1) total[tree.parent[i]] += total[i];
      }
      for (i = 0; i < n; i++) {
        if (keep[i] && total[i] <= 0) keep[i] = false;
      }
    }
    // plotly's "remainder" mode: each node's own weight is its total minus its shown children
    var own = total.slice();
    for (i = n - 1; i > 0; i--) {
      if (keep[i]) own[tree.parent[i]] -= total[i];
    }
    var out = { ids: [], parents: [], labels: [], values: [], colors: [], hover: [], index: [], total: total };
    for (i = 0; i < n; i++) {
      if (!keep[i]) continue;
      out.ids.push(String(i));
      out.parents.push(i === 0 ? "" : String(tree.parent[i]));
      out.labels.push(esc(tree.label[i]));
      out.values.push(Math.max(0, own[i]));
      out.colors.push(tree.color[i]);
      out.hover.push(esc(tree.frame[i]));
      out.index.push(i);
    }
    return out;
  }

  /* The index in tree `to` of thread `i` of tree `from` (the thread list names them). */
  function sameThread(from, to, i) {
    if (from === to) return i;
    for (var k = 0; k < to.threads.length; k++) {
      if (to.threads[k].label === from.threads[i].label) return k;
    }
    return i;
  }

  function flameHeight(tree) {
    return Math.min(1500, Math.max(260, 24 * (tree.max_depth + 1) + 40));
  }

  function drawFlame() {
    var fv = data.flames[state.view];
    if (!fv || !fv.tree) {
      Plotly.purge(div);
      div.hidden = true;
      return;
    }
    div.hidden = false;
    var trees = chosen(fv);
    var tree = state.thread === MERGED ? trees.merged : trees.tree;
    var s = subtree(tree, state.thread < 0 ? -1 : sameThread(fv.tree, trees.tree, state.thread));
    state.tree = tree;
    state.shown = s;
    var unit = fv.unit === "s" ? " s" : " " + fv.unit;
    var trace = {
      type: "icicle",
      ids: s.ids,
      parents: s.parents,
      labels: s.labels,
      values: s.values,
      branchvalues: "remainder",
      customdata: s.hover,
      marker: { colors: s.colors.slice(), line: { width: 0.5, color: "#ffffff" } },
      textinfo: "label",
      hovertemplate:
        "%{customdata}<br>%{value:.3~f}" + unit +
        ", %{percentRoot:.1%} of the total, %{percentParent:.1%} of its caller<extra></extra>",
      tiling: { orientation: "v", pad: 0 },
      pathbar: { visible: true, side: "top", thickness: 22 },
      maxdepth: -1,
      insidetextfont: { size: 11 },
      sort: true
    };
    var layout = {
      height: flameHeight(tree),
      margin: { l: 2, r: 2, t: 28, b: 2 },
      font: FONT,
      paper_bgcolor: "#ffffff",
      /* a label shrunk below 10 px to fit a narrow box is unreadable: hide it (hover names it) */
      uniformtext: { minsize: 10, mode: "hide" }
    };
    div.style.height = layout.height + "px";
    Plotly.react(div, [trace], layout, CONFIG);
    applySearch();
  }

  function fillThreads() {
    while (threadSelect.options.length > 2) threadSelect.remove(2);
    var fv = data.flames[state.view];
    var threads = fv && fv.tree ? fv.tree.threads : [];
    var total = fv && fv.tree ? fv.tree.total : 1;
    for (var i = 0; i < threads.length; i++) {
      var opt = document.createElement("option");
      opt.value = String(i);
      opt.textContent = threads[i].label + " (" + (100 * threads[i].value / total).toFixed(1) + "%)";
      threadSelect.appendChild(opt);
    }
    threadSelect.value = String(MERGED);
    state.thread = MERGED;
  }

  function showAbout() {
    var ps = document.querySelectorAll("#flame [data-view]");
    for (var i = 0; i < ps.length; i++) {
      ps[i].hidden = ps[i].getAttribute("data-view") !== state.view;
    }
  }

  function setView(view) {
    state.view = view;
    showAbout();
    fillThreads();
    drawFlame();
  }

  /* Search: highlight frames whose text contains the query; report the share of the shown
   * total they cover (a frame inside another match is not counted twice). */
  function applySearch() {
    var s = state.shown;
    var tree = state.tree;
    if (!s || !tree) {
      matchOut.textContent = "";
      return;
    }
    var q = search.value.trim().toLowerCase();
    if (!q) {
      matchOut.textContent = "";
      Plotly.restyle(div, { "marker.colors": [s.colors] });
      return;
    }
    var pos = {};
    var under = [];
    var colors = [];
    var count = 0;
    var covered = 0;
    for (var k = 0; k < s.index.length; k++) {
      var i = s.index[k];
      pos[i] = k;
      var hit = i > 0 && tree.frame[i].toLowerCase().indexOf(q) >= 0;
      var above = i > 0 && pos[tree.parent[i]] !== undefined && under[pos[tree.parent[i]]];
      under.push(hit || above);
      if (hit) count++;
      if (hit && !above) covered += s.total[i];
      colors.push(hit ? HIGHLIGHT : DIMMED);
    }
    var root = s.total[0] || 1;
    matchOut.textContent =
      count === 0
        ? "no frame matches"
        : count + " frame" + (count === 1 ? "" : "s") + " match, " +
          (100 * covered / root).toFixed(1) + "% of the total shown";
    Plotly.restyle(div, { "marker.colors": [colors] });
  }

  var radios = document.querySelectorAll('input[name="flame-view"]');
  var first = null;
  for (var r = 0; r < radios.length; r++) {
    radios[r].addEventListener("change", function (ev) {
      if (ev.target.checked) setView(ev.target.value);
    });
    if (!first && !radios[r].disabled) first = radios[r];
  }
  linesBox.addEventListener("change", drawFlame);
  nativeBox.addEventListener("change", drawFlame);
  threadSelect.addEventListener("change", function () {
    state.thread = parseInt(threadSelect.value, 10);
    drawFlame();
  });
  var timer = null;
  search.addEventListener("input", function () {
    if (timer) clearTimeout(timer);
    timer = setTimeout(applySearch, 150);
  });
  document.getElementById("flame-reset").addEventListener("click", function () {
    if (state.shown) Plotly.restyle(div, { level: "0" });
  });
  if (first) {
    first.checked = true;
    setView(first.value);
  } else {
    state.view = radios.length ? radios[0].value : null;
    showAbout();
    div.hidden = true;
  }
})();
