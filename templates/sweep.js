// Draws the sweep's charts from its JSON data (no network): QPS and P50/P95/P99 against
// concurrency for every setting, the knee starred, and each step's verdict as a band.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("sweep-data").textContent);
  var COLORS = {preprocess: "#ae3ec9", lock: "#e03131", scheduling: "#f08c00", compute: "#1971c2",
                memory_bandwidth: "#0c8599", io: "#2f9e44", idle: "#adb5bd", unknown: "#868e96"};
  var LINES = ["#1c7ed6", "#e8590c", "#2b8a3e", "#862e9c", "#c2255c", "#5c940d", "#0b7285", "#495057"];
  // plotly reads a few HTML-like tags in text: show every string as the text it is
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function fmt(x, d) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(d); }
  var qpsEl = document.getElementById("chart-qps"), latEl = document.getElementById("chart-latency");
  if (!window.Plotly || !qpsEl || !latEl) { return; }
  var settings = data.settings, many = settings.length > 1;
  var users = [];
  settings.forEach(function (s) { s.steps.forEach(function (r) { if (users.indexOf(r.users) < 0) { users.push(r.users); } }); });
  users.sort(function (a, b) { return a - b; });

  function hover(s, r) {
    return esc((many ? s.name + "<br>" : "") + r.users + " users: " + fmt(r.qps, 1) + " QPS, P50 " + fmt(r.p50_ms, 1) +
      " / P95 " + fmt(r.p95_ms, 1) + " / P99 " + fmt(r.p99_ms, 1) + " ms") + "<br>" +
      esc(r.verdict ? r.verdict.label : "no verdict") + (r.band === "knee" ? "<br><b>knee</b>" : "") +
      (r.band === "saturated" ? "<br>load generator saturated" : "") + "<extra></extra>";
  }
  function traces(kind) {
    var out = [];
    settings.forEach(function (s, i) {
      var pts = s.steps.filter(function (r) { return r.qps !== null; });
      var col = LINES[i % LINES.length], name = many ? esc(s.name) : "";
      var texts = pts.map(function (r) { return hover(s, r); });
      if (kind === "qps") {
        out.push({x: pts.map(function (r) { return r.users; }), y: pts.map(function (r) { return r.qps; }),
                  type: "scatter", mode: "lines+markers", name: (name ? name + " " : "") + "QPS",
                  line: {color: col}, hovertemplate: texts});
      } else {
        [["p50_ms", "P50", "dot"], ["p95_ms", "P95", "dash"], ["p99_ms", "P99", "solid"]].forEach(function (p) {
          out.push({x: pts.map(function (r) { return r.users; }), y: pts.map(function (r) { return r[p[0]]; }),
                    type: "scatter", mode: "lines+markers", name: (name ? name + " " : "") + p[1],
                    line: {color: col, dash: p[2]}, hovertemplate: texts});
        });
      }
      var k = s.knee;
      if (k.status === "found" && k.index !== null) {
        var r = s.steps[k.index];
        out.push({x: [r.users], y: [kind === "qps" ? r.qps : r.p99_ms], type: "scatter", mode: "markers",
                  name: (name ? name + " " : "") + "knee", marker: {symbol: "star", size: 18, color: col,
                  line: {color: "#222", width: 1}}, hovertemplate: [hover(s, r)], showlegend: i === 0 || many});
      }
    });
    return out;
  }
  // a band spans halfway (in log scale) to the neighbouring steps; a dotted line marks the knee
  function bands(s) {
    var shapes = [], steps = s.steps, k = s.knee;
    if (k.status === "found" && k.index !== null) {
      var ku = steps[k.index].users;
      shapes.push({type: "line", xref: "x", yref: "paper", x0: ku, x1: ku, y0: 0, y1: 1,
                   line: {color: "#222", dash: "dot", width: 1}, name: "knee"});
    }
    steps.forEach(function (r, i) {
      var lo = i > 0 ? Math.sqrt(steps[i - 1].users * r.users) : r.users / Math.SQRT2;
      var hi = i < steps.length - 1 ? Math.sqrt(steps[i + 1].users * r.users) : r.users * Math.SQRT2;
      var grey = r.band === "saturated" || r.band === "failed";
      var col = grey ? "#495057" : (r.verdict ? (COLORS[r.verdict.primary] || COLORS.unknown) : "#ffffff");
      shapes.push({type: "rect", xref: "x", yref: "paper", x0: lo, x1: hi, y0: 0, y1: 1, layer: "below",
                   line: {width: 0}, fillcolor: col, opacity: grey ? 0.25 : 0.13,
                   name: "band-" + r.users});
    });
    return shapes;
  }
  function labels(s) {  // each band's verdict category, along the top of the chart
    return s.steps.map(function (r) {
      var text = r.band === "saturated" ? "generator" : r.band === "failed" ? "failed" :
        (r.verdict ? r.verdict.primary + (r.verdict.kind ? "/" + r.verdict.kind : "") : "");
      return {x: Math.log10(r.users), xref: "x", y: 1, yref: "paper", yanchor: "bottom", showarrow: false,
              text: esc(text), font: {size: 10, color: "#555"}, name: "band-label-" + r.users};
    });
  }
  function layout(title, ytitle, shapes, extra) {
    var lay = {title: {text: title}, margin: {t: 56, l: 60, r: 10, b: 50}, shapes: shapes,
               xaxis: {type: "log", title: {text: "concurrent users"}, tickvals: users, ticktext: users.map(String)},
               yaxis: {title: {text: ytitle}, rangemode: "tozero"}, legend: {orientation: "h", y: -0.22},
               hovermode: "closest"};
    Object.keys(extra || {}).forEach(function (k) { lay[k] = extra[k]; });
    return lay;
  }
  function sla() {
    var v = data.sweep.sla_p99_ms;
    return v ? [{type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: v, y1: v,
                 line: {color: "#b42318", dash: "dashdot", width: 2}, name: "sla"}] : [];
  }
  var chosen = data.chosen === null || data.chosen === undefined ? 0 : data.chosen;
  function draw(idx) {
    var s = settings[idx] || settings[0];
    if (!s) { return; }
    var opts = {displaylogo: false, responsive: true};
    window.Plotly.react(qpsEl, traces("qps"), layout("QPS (successful responses per second)", "QPS", bands(s),
                        {annotations: labels(s)}), opts);
    window.Plotly.react(latEl, traces("latency"), layout("Latency: P50, P95, P99", "ms", bands(s).concat(sla()),
                        {annotations: labels(s)}), opts);
  }
  draw(chosen);
  var sel = document.getElementById("band-setting");
  if (sel) { sel.addEventListener("change", function () { draw(Number(sel.value)); }); }
})();
