#!/usr/bin/env bash
# Rebuild templates/vendor/plotly.min.js, the plotly.js inlined into every HTML report, from
# npm's plotly.js (versions pinned in package.json and package-lock.json). Needs Node.js and
# npm; run it after changing the version or the traces in entry.js, and commit the result.
# The reports then need no network and no Python plotly package.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --ignore-scripts
version=$(node -p "require('plotly.js/package.json').version")
out=../../templates/vendor/plotly.min.js
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
./node_modules/.bin/esbuild entry.js --bundle --minify --format=iife --global-name=Plotly \
  --target=es2017 --define:global=window --loader:.css=empty --legal-comments=eof \
  --log-level=warning \
  --outfile="$tmp"
{
  echo "/*! plotly.js v${version} (MIT License, https://github.com/plotly/plotly.js): core with the icicle, heatmap and bar traces, built for diagnose by tools/plotly/build.sh */"
  cat "$tmp"
} > "$out"
if grep -qi '</script' "$out"; then
  echo "build.sh: the bundle contains '</script': it cannot be inlined" >&2
  exit 1
fi
echo "wrote $out ($(wc -c < "$out") bytes)"
