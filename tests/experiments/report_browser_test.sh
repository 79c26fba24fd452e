#!/usr/bin/env bash
# report.html in a real headless browser: a real sweep (tiny copy model, 2 encodings x 2 seeds) and its
# report, with stand-in probe images in two runs, opened from disk with no server. Passes when
#   1. the page as written loads with no console message at all (errors, CSP violations, failed loads), and
#   2. every <img> decodes and is laid out (naturalWidth/Height and box > 0), and there is one per rendered
#      plot and probe: checked by a copy of the page with a small script that writes the result into the
#      DOM, read back with --dump-dom;
#   3. in a 1400 px wide window the headline and the main plot lie within the first 1400 x 900 px (what a
#      --window-size=1400,900 screenshot shows; with --dump-dom this chromium reports innerHeight 757, so
#      the check uses 900 itself), the plot before the first table (DOM order).
# Exits 77 (ctest: skipped, not passed) when no chromium is installed or gnuplot is missing (no plots).
#   tests/experiments/report_browser_test.sh PELAB_BINARY
# Env: PELAB_CHROMIUM (browser binary; default chromium or chromium-browser on PATH),
#      PELAB_REPORT_SCREENSHOT=FILE.png (also save a screenshot of the page, for a human look;
#      PELAB_REPORT_SCREENSHOT_SIZE=1400,900 for the first screen only).
set -uo pipefail

pelab=${1:?usage: report_browser_test.sh PELAB_BINARY}
chromium=${PELAB_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chromium" ]; then
  echo "SKIPPED: no chromium found (apt-get install chromium, or set PELAB_CHROMIUM)"
  exit 77
fi
if ! command -v gnuplot >/dev/null; then
  echo "SKIPPED: gnuplot missing, so the report has no plots to show"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

cat >"$work/tiny.toml" <<'EOF'
[model]
d_model = 16
n_layers = 1
n_heads = 2
[task]
name = "copy"
train_len = 4
[train]
steps = 60
batch_size = 8
log_every = 10
eval_every = 20
early_stop_metric = "token_acc"
early_stop_target = 0.3
[eval]
lengths = [2, 4, 8]
samples = 16
[sweep]
"encoding.name" = ["none", "rope"]
"train.seed" = [0, 1]
EOF
sweep="$work/sweep"
OPENBLAS_NUM_THREADS=1 "$pelab" sweep "$work/tiny.toml" --out "$sweep" --jobs 2 >"$work/sweep.log" 2>&1 ||
  { cat "$work/sweep.log"; fail "pelab sweep failed"; }
# Stand-in probes (any PNG will do): the report shows them side by side per encoding.
for run in "$sweep"/encoding.name=*__train.seed=0; do
  mkdir -p "$run/probe"
  cp "$sweep/plots/length_generalization.png" "$run/probe/attention_L0.png"
  echo '{"title": "stand-in probe"}' >"$run/probe/attention_L0.json"
done
"$pelab" report "$sweep" >"$work/report.log" 2>&1 || { cat "$work/report.log"; fail "pelab report failed"; }
grep -q "^warning" "$work/report.log" && { cat "$work/report.log"; fail "pelab report warned"; }
page="$sweep/report.html"
[ -f "$page" ] || fail "no report.html"
plots=$(ls "$sweep"/plots/*.png | wc -l)
expected=$((plots + 2))
[ "$plots" -ge 3 ] || fail "expected at least 3 rendered plots, found $plots"

browse() {  # browse OUT ERR ARGS... : run headless chromium on a page, DOM to OUT, log to ERR
  local out=$1 err=$2
  shift 2
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-extensions \
    --user-data-dir="$(mktemp -d "$work/profile.XXXX")" --enable-logging=stderr --v=0 "$@" >"$out" 2>"$err"
}

# 1. The page as written: no console message (chromium logs each as "...:CONSOLE...").
browse "$work/dom1.html" "$work/err1.log" --dump-dom "file://$page" || { cat "$work/err1.log"; fail "chromium failed"; }
grep -q "</html>" "$work/dom1.html" || fail "chromium returned no page"
if grep -a "CONSOLE" "$work/err1.log"; then fail "console messages while loading report.html (above)"; fi

# 2. A copy beside it (same relative links) with a checker script; the CSP is widened for that script only.
check="$sweep/report_check.html"
sed -e "s|style-src 'unsafe-inline'\"|style-src 'unsafe-inline'; script-src 'unsafe-inline'\"|" \
  -e 's|</body>|<script>\
window.addEventListener("error", function (e) { (window.errs = window.errs \|\| []).push(String(e.message \|\| e)); }, true);\
window.addEventListener("load", function () {\
  var imgs = document.images, bad = [];\
  for (var i = 0; i < imgs.length; i++) {\
    var r = imgs[i].getBoundingClientRect();\
    if (!imgs[i].complete \|\| imgs[i].naturalWidth < 1 \|\| imgs[i].naturalHeight < 1 \|\| r.width < 1 \|\| r.height < 1)\
      bad.push(imgs[i].alt \|\| String(i));\
  }\
  var head = document.getElementById("headline"), plot = document.getElementById("plot-length_generalization"),\
      table = document.querySelector("table"), screen = [], W = 1400, H = 900;\
  function off(e) { var r = e.getBoundingClientRect(); return r.bottom > H \|\| r.right > W; }\
  if (!head \|\| off(head)) screen.push("headline");\
  if (!plot \|\| off(plot.querySelector("img"))) screen.push("plot");\
  if (!plot \|\| !table \|\| !(plot.compareDocumentPosition(table) \& Node.DOCUMENT_POSITION_FOLLOWING))\
    screen.push("plot-after-table");\
  var d = document.createElement("pre");\
  d.id = "pelab-check";\
  d.textContent = "images=" + imgs.length + " bad=" + bad.length + " errors=" + (window.errs \|\| []).length +\
                  " first-screen=" + innerWidth + "x" + H + (screen.length ? ":missing:" + screen.join(",") : ":ok") +\
                  " [" + bad.concat(window.errs \|\| []).join("; ") + "]";\
  document.body.appendChild(d);\
});\
</script></body>|' "$page" >"$check"
grep -q "script-src 'unsafe-inline'" "$check" || fail "could not widen the CSP of the check copy"
browse "$work/dom2.html" "$work/err2.log" --window-size=1400,900 --dump-dom "file://$check" || { cat "$work/err2.log"; fail "chromium failed"; }
result=$(grep -o 'id="pelab-check">[^<]*' "$work/dom2.html" | sed 's/.*>//')
echo "check page: $result (expected images=$expected bad=0 errors=0 first-screen=1400x900:ok)"
# 3. The answer first (issue #43): at 1400 x 900 the headline and the whole main plot are on the first
#    screen, and the main plot comes before the first table in the DOM.
case "$result" in *"first-screen=1400x900:ok"*) ;; *) fail "headline or main plot not on the first screen" ;; esac
[ "$result" = "images=$expected bad=0 errors=0 first-screen=1400x900:ok []" ] || fail "not every image shows"
if grep -a "CONSOLE" "$work/err2.log"; then fail "console messages on the check copy (above)"; fi

if [ -n "${PELAB_REPORT_SCREENSHOT:-}" ]; then
  browse /dev/null "$work/err3.log" --hide-scrollbars --window-size="${PELAB_REPORT_SCREENSHOT_SIZE:-1500,5200}" \
    --screenshot="$PELAB_REPORT_SCREENSHOT" "file://$page" || fail "screenshot failed"
  echo "screenshot: $PELAB_REPORT_SCREENSHOT"
fi
echo "PASS: report.html loads without console messages and shows all $expected images"
