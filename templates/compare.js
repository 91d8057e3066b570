// Draws the differential flame graphs of compare.html from its JSON data (no network).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("compare-data").textContent);
  // plotly reads a few HTML-like tags in labels: show every frame as the text it is
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  // a box shows its function ("handle"); the hover text the whole frame, file included
  function shortName(s) { var m = /^(.+) \([^()]*\)$/.exec(String(s)); return m ? m[1] : String(s); }
  Object.keys(data.flames).forEach(function (key) {
    var view = data.flames[key], el = document.getElementById("flame-" + key);
    if (!el || !window.Plotly || view.missing) { return; }
    var t = view.tree, lim = 1e-9;
    for (var i = 1; i < t.delta.length; i++) { lim = Math.max(lim, Math.abs(t.delta[i])); }
    var custom = t.before.map(function (b, i) { return [b, t.after[i], t.delta[i], esc(t.labels[i])]; });
    // white text on the strongly coloured boxes, dark text on the pale ones
    var ink = t.delta.map(function (d) { return Math.abs(d) / lim > 0.45 ? "#ffffff" : "#1f2328"; });
    window.Plotly.newPlot(el, [{
      type: "icicle", ids: t.ids, labels: t.labels.map(shortName).map(esc), parents: t.parents,
      values: t.size, branchvalues: "total", customdata: custom, tiling: {orientation: "v"},
      textinfo: "label", insidetextfont: {size: 12, color: ink},
      hovertemplate: "%{customdata[3]}<br>before %{customdata[0]:.2f}, after %{customdata[1]:.2f} " + esc(view.unit) +
        "<br>change %{customdata[2]:+.2f}<extra></extra>",
      marker: {colors: t.delta, cmin: -lim, cmid: 0, cmax: lim, showscale: true,
               colorscale: [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]],
               colorbar: {title: {text: "after − before"}}}
    }], {margin: {t: 8, l: 4, r: 4, b: 4}}, {displaylogo: false, responsive: true});
  });
})();
