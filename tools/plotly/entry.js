// plotly.js with only the traces diagnose's reports draw: the flame graphs (icicle), the
// thread timeline (heatmap), the run-queue histogram (bar); the line charts (scatter) come
// with the core. The full bundle is 4.8 MB; this one about a quarter of it.
var Plotly = require('plotly.js/lib/core');

Plotly.register([
  require('plotly.js/lib/icicle'),
  require('plotly.js/lib/heatmap'),
  require('plotly.js/lib/bar'),
]);

module.exports = Plotly;
