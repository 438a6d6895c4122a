#!/bin/sh
# umf-fuzz:open: runs umf_open_fuzzer for SECONDS in rounds of at most 60 s, each a fresh process
# over the same growing corpus (SCRATCH/new, then the committed seeds). One process cannot fuzz
# for long: UMF leaks mappings on forged handles until vm.max_map_count is spent (~70 s here,
# reports/findings/ur-578c2a84/umf-fuzz.md). Stops at the first round that fails (a crash, a
# sanitizer report: its input is SCRATCH/crash-*). A round also ends early, cleanly, when the
# target sees half of vm.max_map_count in use (its "the round ends after N executions" line);
# the time it used is taken off SECONDS. Prints each round's DONE line and verdict counts,
# then the totals.
# Usage: run_umf_fuzz.sh FUZZER SCRATCH SEEDS SECONDS (IPCHECK_UMF_FUZZ_SECONDS in the environment wins)
set -u
fuzzer="$1" scratch="$2" seeds="$3" seconds="${IPCHECK_UMF_FUZZ_SECONDS:-$4}"
case "$seconds" in '' | *[!0-9]*) echo "run_umf_fuzz.sh: SECONDS '$seconds' is not a whole number of seconds" >&2; exit 2 ;; esac
rm -rf "$scratch" && mkdir -p "$scratch/new" || exit 2
left="$seconds" round=0 total=0
while [ "$left" -gt 0 ]; do
  round=$((round + 1))
  t=$left
  [ "$t" -gt 60 ] && t=60
  log="$scratch/round-$round.log"
  started=$(date +%s)
  "$fuzzer" -max_total_time="$t" -timeout=10 -rss_limit_mb=4096 -max_len=121 -print_final_stats=1 \
    -artifact_prefix="$scratch/" "$scratch/new" "$seeds" >"$log" 2>&1
  rc=$?
  grep -E '^#[0-9]+.*DONE|^umf_open_fuzzer:' "$log"
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  [ -n "$n" ] || n=$(sed -n 's/^umf_open_fuzzer: the round ends after \([0-9]*\) executions.*/\1/p' "$log")
  total=$((total + ${n:-0}))
  if [ "$rc" != 0 ]; then
    grep -E 'ERROR|SUMMARY|FINDING|runtime error|Test unit written' "$log" | head -n 20
    echo "umf-fuzz: round $round failed (exit $rc): $log"
    exit "$rc"
  fi
  used=$(($(date +%s) - started))
  [ "$used" -ge 1 ] || used=1
  [ "$used" -le "$t" ] || used=$t
  left=$((left - used))
done
echo "umf-fuzz: $total executions in $seconds s ($round rounds), corpus $(ls "$scratch/new" | wc -l) new inputs"
