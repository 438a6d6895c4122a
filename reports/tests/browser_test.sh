#!/usr/bin/env bash
# Opens the HTML report in headless Chromium: the case table rendered and its script ran,
# a filtered and sorted view from the address works, and a screenshot is saved.
# Exits 77 (skipped) when no Chromium is installed: ci/setup installs Debian's chromium.
#
# usage: browser_test.sh IPCHECK RESULTS BASELINE OUTDIR CASES PROBLEMS [HISTORY_FILE...]
set -uo pipefail
ipcheck=$1 results=$2 baseline=$3 out=$4 cases=$5 problems=$6
shift 6

browser=""
for name in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$name" >/dev/null 2>&1; then browser=$(command -v "$name"); break; fi
done
if [ -z "$browser" ]; then
  echo "SKIPPED: no Chromium found (looked for chromium, chromium-browser, google-chrome on PATH);" \
       "install Debian's chromium (ci/setup does) to run the browser test"
  exit 77
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out" || fail "cannot create $out"
"$ipcheck" report render "$results" --baseline "$baseline" --format html -o "$out/report.html" ||
  fail "ipcheck report render exited with $?"

flags=(--headless=new --disable-gpu --no-first-run --no-default-browser-check --hide-scrollbars
       --user-data-dir="$out/profile")
[ "$(id -u)" -eq 0 ] && flags+=(--no-sandbox)  # Chromium refuses to run as root with its sandbox
page() { timeout 90 "$browser" "${flags[@]}" "$@" 2>>"$out/chromium.log"; }
# Every case body of the table, in document order: "status hidden?" per line.
bodies() { grep -o '<tbody class="case[^>]*>' | sed -E 's/.*data-status="([a-z]+)".*/\1 &/' |
           awk '{ print $1, (index($0, "hidden=") ? "hidden" : "shown") }'; }

url="file://$(cd "$out" && pwd)/report.html"

# 1. The page as it opens: every case is a row, all shown, the script finished.
dom=$(page --dump-dom "$url") || fail "chromium --dump-dom exited with $? (see $out/chromium.log)"
printf '%s\n' "$dom" >"$out/report.dom.html"
grep -q 'id="case-table"[^>]*data-ready="1"' <<<"$dom" || fail "the table's script did not run (no data-ready on #case-table)"
n=$(bodies <<<"$dom" | wc -l)
[ "$n" -eq "$cases" ] || fail "the table has $n case rows, expected $cases"
shown=$(bodies <<<"$dom" | grep -c ' shown$')
[ "$shown" -eq "$cases" ] || fail "$shown of $cases rows are shown before any filter"
grep -q "<span id=\"shown\"[^>]*>$cases of $cases cases</span>" <<<"$dom" || fail "the count does not read '$cases of $cases cases'"
echo "ok: $n case rows rendered, all shown"

# 2. A view from the address: problems only, worst first.
dom=$(page --dump-dom "$url#status=problems&sort=-rank") || fail "chromium --dump-dom exited with $?"
shown=$(bodies <<<"$dom" | grep -c ' shown$')
[ "$shown" -eq "$problems" ] || fail "the problems filter shows $shown rows, expected $problems"
first=$(bodies <<<"$dom" | awk '$2 == "shown" { print $1; exit }')
[ "$first" = crash ] || fail "sorted worst first, the first row is '$first', expected crash"
order=$(bodies <<<"$dom" | awk '$2 == "shown" { printf "%s ", $1 }')
echo "ok: #status=problems&sort=-rank shows $shown rows: $order"

# 3. What a person sees: the page with the problems view and the crashed case opened.
page --window-size=1280,2400 --screenshot="$out/report.png" "$url#status=problems&sort=-rank&open=memory.roundtrip.page" >/dev/null ||
  fail "chromium --screenshot exited with $?"
size=$(stat -c %s "$out/report.png" 2>/dev/null || echo 0)
[ "$size" -gt 20000 ] || fail "the screenshot $out/report.png is $size bytes: a blank page?"
echo "screenshot: $out/report.png ($size bytes)"

# 4. The history page of several runs, when given: one row per case, one column per run.
if [ $# -gt 0 ]; then
  "$ipcheck" report history "$@" --format html -o "$out/history.html" || fail "ipcheck report history exited with $?"
  hurl="file://$(cd "$out" && pwd)/history.html"
  dom=$(page --dump-dom "$hurl") || fail "chromium --dump-dom exited with $?"
  rows=$(grep -o '<tr[^>]*><td class="id">' <<<"$dom" | wc -l)
  [ "$rows" -gt 0 ] || fail "the history table has no case rows"
  page --window-size=1100,1400 --screenshot="$out/history.png" "$hurl" >/dev/null || fail "chromium --screenshot exited with $?"
  echo "ok: history of $# runs, $rows case rows; screenshot: $out/history.png"
fi
