#!/usr/bin/env bash
# Hostile inputs and faults against the ipcheck command line, one class per invocation:
#   hostile.sh CLASS IPCHECK WORKDIR GOOD_RESULTS
# Each class asserts the exit code and the message, and that no zero-byte or partial file
# replaced a good one. Prints "SKIP: why" and exits 0 where the machine cannot stage the
# fault (CTest's SKIP_REGULAR_EXPRESSION turns that into a skip).
set -u
self="$(readlink -f "$0")"
class="$1" ipcheck="$2" work="$3" good="$4"
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect CODE 'MESSAGE (grep -E)' -- command...: runs it (bounded: a hang is a failure) and
# checks its exit code and that its output says MESSAGE.
expect() {
  local want="$1" pattern="$2"
  shift 3
  local out rc
  out="$(timeout 60 "$@" 2>&1 </dev/null)"
  rc=$?
  if [ "$rc" -eq 124 ]; then
    fail "hung (killed after 60 s): $*"
    return
  fi
  if [ "$rc" -ne "$want" ]; then
    fail "exit $rc, expected $want: $*"$'\n'"$out"
    return
  fi
  if ! grep -qE -- "$pattern" <<<"$out"; then
    fail "output does not say /$pattern/: $*"$'\n'"$out"
    return
  fi
  echo "ok  exit $rc: $* -> $(grep -E -m1 -- "$pattern" <<<"$out")"
}

# same FILE COPY: FILE is still byte for byte COPY (no zero-byte or partial replacement).
same() {
  if ! cmp -s "$1" "$2"; then fail "$1 was replaced (size $(stat -c %s "$1" 2>/dev/null || echo none))"; fi
}

# no_temp DIR: no temporary file left behind in DIR.
no_temp() {
  local left
  left="$(find "$1" -maxdepth 1 -name '.*.tmp' | head -3)"
  [ -z "$left" ] || fail "temporary files left in $1: $left"
}

results_doc() {  # a minimal results.json around the JSON of its cases and run fields
  printf '{"schema": "ipcheck.results/2", "run": {"adapter": "ref"%s}, "cases": [%s]}\n' "${2:-}" "$1"
}

case "$class" in
  full-disk)
    # A small tmpfs, filled: every writer fails naming the file and the cause; the old files stay.
    if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
      echo "SKIP: cannot mount a tmpfs here (needs root and mount namespaces); file-size-limit stages the same fault"
      exit 0
    fi
    if [ -z "${IPCHECK_HOSTILE_IN_NS:-}" ]; then
      IPCHECK_HOSTILE_IN_NS=1 exec unshare -m --propagation private "$self" "$@"
    fi
    mkdir -p disk
    mount -t tmpfs -o size=2m tmpfs disk || { echo "SKIP: mount -t tmpfs failed"; exit 0; }
    "$ipcheck" report render "$good" --format md -o disk/report.md || fail "rendering on an empty tmpfs failed"
    "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --quiet --out disk/run >/dev/null ||
      fail "a run on an empty tmpfs failed"
    campaign="$(cd "$(dirname "$self")/../.." && pwd)/reports/findings/cuda-580.159.04/campaign-2026-11-23.json"
    "$ipcheck" fuzz --export-c confused_deputy-bytes_24 --results "$campaign" -o disk/program.c >/dev/null ||
      fail "fuzz --export-c on an empty tmpfs failed"
    cp disk/report.md report.md.good
    cp disk/run/results.json results.json.good
    cp disk/program.c program.c.good
    dd if=/dev/zero of=disk/fill bs=64k 2>/dev/null  # until the disk is full
    expect 2 "cannot write 'disk/report.md': writing: No space left on device; free some space" -- \
      "$ipcheck" report render "$good" --format html -o disk/report.md
    same disk/report.md report.md.good
    expect 2 "cannot write 'disk/diff.txt'.*No space left on device" -- \
      "$ipcheck" report diff "$good" "$good" -o disk/diff.txt
    [ ! -e disk/diff.txt ] || fail "report diff left disk/diff.txt on a full disk"
    expect 2 "cannot write 'disk/run/results.json'.*No space left on device" -- \
      "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --quiet --out disk/run
    same disk/run/results.json results.json.good
    expect 2 "cannot write 'disk/program.c'.*No space left on device" -- \
      "$ipcheck" fuzz --export-c confused_deputy-bytes_24 --results "$campaign" -o disk/program.c
    same disk/program.c program.c.good
    # A first store add on the full disk: exit 2, and no store file left (not even 0 bytes).
    expect 2 "disk/results.db" -- "$ipcheck" store add "$good" --db disk/results.db
    [ ! -e disk/results.db ] || fail "a failed first store add left disk/results.db ($(stat -c %s disk/results.db) bytes)"
    no_temp disk
    no_temp disk/run
    ;;

  file-size-limit)
    # RLIMIT_FSIZE (ulimit -f): EFBIG named, never SIGXFSZ killing ipcheck, the old file kept.
    "$ipcheck" report render "$good" --format md -o report.md || fail "rendering failed"
    cp report.md report.md.good
    expect 2 "cannot write 'report.md'.*File too large; the file size limit is too low \(ulimit -f\)" -- \
      bash -c 'ulimit -f 16 && exec "$0" report render "$1" --format html -o report.md' "$ipcheck" "$good"
    same report.md report.md.good
    "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --quiet --out run >/dev/null ||
      fail "a run failed"
    cp run/results.json results.json.good
    expect 2 "cannot write 'run/results.json'.*File too large" -- \
      bash -c 'ulimit -f 4 && exec "$0" run --adapter ref --filter memory.open.repeat --exact --audit proc --quiet --out run' "$ipcheck"
    same run/results.json results.json.good
    no_temp .
    no_temp run
    ;;

  symlink-temp)
    # Links planted where a writer might put its temporary file, or at the target itself:
    # nothing is written through them.
    echo "secret: owned by someone else" >victim
    cp victim victim.good
    ln -s victim report.md.tmp  # the old fixed temporary name
    "$ipcheck" report render "$good" --format md -o report.md || fail "rendering failed"
    same victim victim.good
    [ -L report.md.tmp ] || fail "the planted link report.md.tmp was replaced"
    [ -f report.md ] && [ ! -L report.md ] && grep -q "ipcheck" report.md || fail "report.md is not the rendering"
    ln -s victim out.md  # a link at the target: replaced by the new file, the victim untouched
    "$ipcheck" report render "$good" --format md -o out.md || fail "rendering over a link failed"
    same victim victim.good
    [ ! -L out.md ] || fail "out.md is still a link: the rendering went through it"
    mkdir run && ln -s ../victim run/results.json.tmp
    "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --quiet --out run >/dev/null ||
      fail "a run failed"
    same victim victim.good
    no_temp .
    no_temp run
    ;;

  non-regular)
    # FIFOs, folders and devices as inputs: refused at once with exit 2, never waited on.
    mkfifo fifo.json fifo.txt fifo.repro
    mkdir folder
    expect 2 "results file 'fifo.json' is a FIFO \(named pipe\); give a regular file" -- \
      "$ipcheck" report render fifo.json
    expect 2 "results file 'folder' is a folder; give a regular file" -- "$ipcheck" report diff folder "$good"
    expect 2 "results file '/dev/zero' is a character device; give a regular file" -- \
      "$ipcheck" report history "$good" /dev/zero
    expect 2 "--expectations: expectations file 'folder' is a folder; give a regular file" -- \
      "$ipcheck" run --adapter ref --expectations folder --out run
    expect 2 "--expectations: expectations file 'fifo.txt' is a FIFO" -- \
      "$ipcheck" run --adapter ref --expectations fifo.txt --out run
    [ ! -e run/results.json ] || fail "a refused run wrote results"
    expect 2 "reproducer 'fifo.repro' is a FIFO \(named pipe\); give a regular file" -- \
      "$ipcheck" fuzz --replay fifo.repro
    expect 2 "--results .*results file 'fifo.json' is a FIFO" -- \
      "$ipcheck" fuzz --adapter ref --runs 10 --results fifo.json --out fuzz
    mkdir corpus && mkfifo corpus/a.repro && mkdir corpus/b.repro
    expect 0 "corpus file corpus/a.repro skipped: corpus file 'corpus/a.repro' is a FIFO" -- \
      "$ipcheck" fuzz --adapter ref --runs 200 --corpus corpus --quiet --out fuzz
    ;;

  huge-numbers)
    # Numbers beyond a double, or beyond the field's type: exit 2 naming the field.
    results_doc '' ', "duration_s": 1e999' >overflow.json
    expect 2 "field run.duration_s: number overflow parsing '1e999'" -- "$ipcheck" report render overflow.json
    results_doc '{"id": "a.b", "status": "pass", "roles": [{"name": "p", "pid": 1e300}]}' >pid.json
    expect 2 "cases\[0\]: field \"pid\" is 1e\+300, not a whole number" -- "$ipcheck" report diff pid.json pid.json
    results_doc '{"id": "a.b", "status": "pass", "checks": [{"native": -99999999999999999999}]}' >native.json
    expect 2 "field \"native\" is .*not a whole number" -- "$ipcheck" report render native.json
    printf '{"schema": "ipcheck.fuzz-repro/1", "setup": "x", "input": {"length": 1e999}}\n' >huge.repro
    expect 2 "field input.length: number overflow" -- "$ipcheck" fuzz --replay huge.repro
    expect 2 "option '--jobs' is '99999999999999999999'; give a whole number from 1 to 256" -- \
      "$ipcheck" run --jobs 99999999999999999999
    expect 2 "option '--timeout' is '1e999'; give a number from 0.1 to 86400" -- "$ipcheck" run --timeout 1e999
    ;;

  wrong-shapes)
    # Valid JSON of the wrong shape, malformed expectations: clear errors naming the field.
    echo '[]' >array.json
    expect 2 "array.json: results: the document is not a JSON object" -- "$ipcheck" report render array.json
    results_doc '' >empty.json
    sed 's/"cases": \[\]/"cases": {"a": 1}/' empty.json >cases-object.json
    expect 2 "field \"cases\" is object, not an array" -- "$ipcheck" report render cases-object.json
    results_doc '1, 2' >cases-numbers.json
    expect 2 "field \"cases\" holds number items; each must be an object" -- "$ipcheck" report render cases-numbers.json
    results_doc '{"id": "a.b", "status": "pass", "duration_s": "slow"}' >duration-text.json
    expect 2 "cases\[0\]: field \"duration_s\" is string, not a number" -- "$ipcheck" report render duration-text.json
    results_doc '' ', "adapter": 7' >adapter-number.json
    expect 2 "run: field \"adapter\" is number, not text" -- "$ipcheck" report render adapter-number.json
    echo '{"schema": "ipcheck.results/2", "run": {}, "fuzz": [1]}' >fuzz-array.json
    expect 2 "field \"fuzz\" is array, not an object" -- "$ipcheck" report render fuzz-array.json
    printf 'not json' >garbage.json
    expect 2 "results file 'garbage.json' is not valid JSON" -- "$ipcheck" report render garbage.json
    echo '[1, 2]' >array.repro
    expect 2 "reproducer 'array.repro': the document is array, not an object" -- "$ipcheck" fuzz --replay array.repro
    printf '{"schema": "ipcheck.fuzz-repro/1", "setup": 5}\n' >setup-number.repro
    expect 2 "reproducer 'setup-number.repro': field \"setup\" is number, not text" -- \
      "$ipcheck" fuzz --replay setup-number.repro
    printf 'memory.open.repeat  fail\n' >no-reason.txt
    expect 2 "--expectations: no-reason.txt:1: 'memory.open.repeat' has no reason" -- \
      "$ipcheck" run --adapter ref --expectations no-reason.txt --out run
    printf '@block x\nmemory.open.repeat fail why\n' >open-block.txt
    expect 2 "open-block.txt:1: @block is never closed" -- "$ipcheck" run --expectations open-block.txt --out run
    printf 'memory.open.repeat fail bogus=1 why\n' >bad-key.txt
    expect 2 "bad-key.txt:1: unknown key 'bogus'" -- "$ipcheck" run --expectations bad-key.txt --out run
    [ ! -e run ] || fail "a refused run made its --out folder"
    ;;

  duplicate-ids)
    # Two results for one case id would let a regression hide behind the first.
    results_doc '{"id": "memory.open.repeat", "status": "pass"}, {"id": "memory.open.repeat", "status": "fail"}' >dup.json
    expect 2 "case id \"memory.open.repeat\" appears twice \(cases\[0\] and cases\[1\]\)" -- \
      "$ipcheck" report diff "$good" dup.json
    expect 2 "appears twice" -- "$ipcheck" report render dup.json
    expect 2 "appears twice" -- "$ipcheck" fuzz --adapter ref --runs 10 --results dup.json --out fuzz
    ;;

  bad-out)
    # --out that cannot take results: exit 2 before the first case runs.
    echo "a file" >plain
    cp plain plain.good
    expect 2 "--out is 'plain': cannot use 'plain' for outputs: .*give a folder path" -- \
      "$ipcheck" run --adapter ref --out plain
    expect 2 "--out is 'plain/sub': cannot use 'plain/sub' for outputs: a part of the path is a file" -- \
      "$ipcheck" run --adapter ref --out plain/sub
    expect 2 "--out is '/proc/ipcheck-results': cannot use '/proc/ipcheck-results' for outputs" -- \
      "$ipcheck" run --adapter ref --out /proc/ipcheck-results
    expect 2 "--out is 'plain'" -- "$ipcheck" fuzz --adapter ref --runs 10 --out plain
    expect 2 "--out is 'plain'" -- "$ipcheck" bench --adapter ref --brief --out plain
    same plain plain.good
    # Nothing ran: a refused run prints no case line.
    out="$("$ipcheck" run --adapter ref --out plain 2>&1)"
    ! grep -q '^\[' <<<"$out" || fail "cases ran before --out was refused"
    ;;

  command-line)
    # Numbers parse the same everywhere; unknown keys and names are errors listing the valid ones.
    for v in " 5" "5 " "0x10" "abc" "-1" "" "1.5" "+3"; do
      quoted="$(printf '%s' "$v" | sed 's/[.+]/\\&/g')"
      expect 2 "option '--jobs' is '$quoted'; give a whole number from 1 to 256" -- "$ipcheck" run --jobs "$v"
    done
    expect 2 "option '--seed' is '-1'; give a whole number from 0 to 18446744073709551615 \(decimal, or hex with 0x\)" -- \
      "$ipcheck" fuzz --runs 1 --seed -1
    expect 2 "option '--runs' is ' 5'" -- "$ipcheck" fuzz --runs " 5"
    expect 2 "option '--skip-exit-code' is 'abc'; give a whole number from 0 to 255" -- \
      "$ipcheck" run --skip-exit-code abc --out run
    expect 2 "option '--skip-exit-code' is '300'" -- "$ipcheck" fuzz --runs 1 --skip-exit-code 300
    expect 2 "option '--timeout' is 'inf'" -- "$ipcheck" run --timeout inf
    expect 2 "--adapter-opt 'colour' is no option of adapter ref; ref takes devices" -- \
      "$ipcheck" run --adapter ref --adapter-opt colour=green --out run
    expect 2 "--adapter-opt 'colour' is no option of adapter ze; ze takes handle, driver, devices" -- \
      "$ipcheck" info --adapter ze --adapter-opt colour=green
    expect 2 "--adapter-opt 'colour' is no option of adapter ref" -- "$ipcheck" fuzz --runs 1 --adapter-opt colour=1
    expect 2 "--adapter-opt 'colour' is no option of adapter ref" -- "$ipcheck" bench --brief --adapter-opt colour=1
    expect 2 "option '--adapter-opt' gives 'devices' twice" -- \
      "$ipcheck" info --adapter-opt devices=a --adapter-opt devices=b
    expect 2 "--adapter is 'nope'; use one of .*ref" -- "$ipcheck" info --adapter nope
    expect 2 "--param 'cylces' is read by no selected case; the selected cases read: cycles" -- \
      "$ipcheck" run --filter stress.open_close --exact --param cylces=5 --out run
    expect 2 "--param 'cycles' is read by no selected case; the selected cases take no --param" -- \
      "$ipcheck" run --filter memory.open.repeat --exact --param cycles=5 --out run
    expect 2 "--corpus is 'no-such-corpus': no such folder; create it first" -- \
      "$ipcheck" fuzz --runs 1 --corpus no-such-corpus
    [ ! -e no-such-corpus ] || fail "--corpus created a folder"
    [ ! -e run ] || fail "a refused run made its --out folder"
    ;;

  signals)
    # HUP, INT and TERM end a run with the finished cases written and the rest incomplete;
    # a second INT still writes results.json.
    for sig in HUP INT TERM INT2; do
      "$ipcheck" run --adapter ref -j 1 --audit proc --out "run-$sig" >"out-$sig" 2>&1 &
      pid=$!
      for _ in $(seq 600); do  # until a case has finished (60 s at most)
        grep -qE '^\[ *1/' "out-$sig" && break
        sleep 0.1
      done
      if [ "$sig" = INT2 ]; then
        kill -INT "$pid"
        sleep 0.05
        kill -INT "$pid"
      else
        kill "-$sig" "$pid"
      fi
      wait "$pid"
      rc=$?
      [ "$rc" -eq 1 ] || fail "SIG$sig: exit $rc, expected 1"$'\n'"$(tail -5 "out-$sig")"
      signame="SIG${sig%2}"
      grep -q "ipcheck: $signame: ending the run; finished cases are kept" "out-$sig" ||
        fail "SIG$sig: ipcheck did not say it was ending the run"
      if [ ! -s "run-$sig/results.json" ]; then
        fail "SIG$sig: no results.json"
        continue
      fi
      passed="$(grep -c '"status": "pass"' "run-$sig/results.json")"
      incomplete="$(grep -c '"status": "incomplete"' "run-$sig/results.json")"
      [ "$passed" -ge 1 ] || fail "SIG$sig: no finished case was kept"
      [ "$incomplete" -ge 1 ] || fail "SIG$sig: no case is incomplete"
      echo "ok  SIG$sig: exit 1, $passed passed and $incomplete incomplete in run-$sig/results.json"
    done
    ;;

  one-writer)
    # fuzz --export-c and bench's raw files and logs go through the atomic writer: a link
    # planted at the target (to a 0600 file of someone else's) is replaced, never followed;
    # a FIFO there never hangs the writer; nothing temporary is left.
    src="$(cd "$(dirname "$self")/../.." && pwd)"
    campaign="$src/reports/findings/cuda-580.159.04/campaign-2026-11-23.json"
    echo "secret: root's 0600 file" >victim && chmod 0600 victim
    cp -p victim victim.good
    ln -s victim program.c
    expect 0 "wrote program.c: finding confused_deputy-bytes_24" -- \
      "$ipcheck" fuzz --export-c confused_deputy-bytes_24 --results "$campaign" -o program.c
    same victim victim.good
    [ "$(stat -c %a victim)" = 600 ] || fail "the victim's mode changed"
    [ -f program.c ] && [ ! -L program.c ] && grep -q "cuIpcOpenMemHandle" program.c ||
      fail "program.c is not the exported program (or still a link)"
    mkfifo fifo.c
    expect 0 "wrote fifo.c" -- "$ipcheck" fuzz --export-c confused_deputy-bytes_24 --results "$campaign" -o fifo.c
    [ -f fifo.c ] || fail "fifo.c is not a regular file now"
    no_temp .
    # bench: links planted at every raw file and log it writes.
    mkdir bench
    for f in ipc.json ipc-consumer.log catalog-0.log; do
      ln -s ../victim "bench/$f"
    done
    mkfifo bench/ipc-producer.log
    expect 0 "wrote bench/ipc.json" -- "$ipcheck" bench --adapter ref --brief --parts ipc,catalog \
      --catalog-runs 1 --repetitions 1 --filter 'floor/mem_open_close/4KiB' --out bench
    same victim victim.good
    for f in ipc.json ipc-producer.log ipc-consumer.log catalog-0.log; do
      [ -f "bench/$f" ] && [ ! -L "bench/$f" ] || fail "bench/$f is not bench's own file (still a link or a FIFO?)"
    done
    grep -q '"benchmarks"' bench/ipc.json || fail "bench/ipc.json is not Google Benchmark's output"
    left="$(find bench -maxdepth 1 -name '.bench-*' -o -maxdepth 1 -name '.*.tmp')"
    [ -z "$left" ] || fail "bench left temporary files: $left"
    ;;

  bench-signals)
    # bench, like run: HUP, INT and TERM end it with what it measured written, the program
    # it was running ended and reaped, its private folder removed.
    for sig in INT TERM HUP; do
      out="bench-$sig" before=$failures
      "$ipcheck" bench --adapter ref --brief --parts ipc,catalog --catalog-runs 3 --repetitions 1 \
        --filter 'floor/mem_open_close/4KiB' --out "$out" >"out-$sig" 2>&1 &
      pid=$!
      for _ in $(seq 600); do  # until the catalog runs (ipc measured): 60 s at most
        grep -q '^catalog: run 1' "out-$sig" 2>/dev/null && break
        sleep 0.1
      done
      sleep 0.5
      kill "-$sig" "$pid"
      timeout 60 tail --pid="$pid" -f /dev/null || fail "SIG$sig: bench did not end within 60 s"
      wait "$pid"
      rc=$?
      [ "$rc" -eq 1 ] || fail "SIG$sig: exit $rc, expected 1"$'\n'"$(tail -5 "out-$sig")"
      grep -q "ipcheck: SIG$sig" "out-$sig" || fail "SIG$sig: bench did not say it was ending"
      grep -q 'interrupted by a signal' "$out/results.json" 2>/dev/null ||
        fail "SIG$sig: results.json does not say the bench was interrupted"
      [ -s "$out/ipc.json" ] || fail "SIG$sig: the ipc part measured before the signal was not kept"
      left="$(find "$out" -maxdepth 1 -name '.bench-*')"
      [ -z "$left" ] || fail "SIG$sig: the private folder was left: $left"
      survivors="$(pgrep -f -- "$work/$out" || true)"
      [ -z "$survivors" ] || fail "SIG$sig: processes left behind: $survivors"
      [ "$failures" -eq "$before" ] && echo "ok  SIG$sig: exit 1, ipc.json kept, nothing left behind"
    done
    ;;

  text)
    # A results file with a hostile payload in every text field (script, event handler,
    # Markdown link and image, raw HTML, terminal escape sequences, C1 controls, characters
    # XML cannot hold): every rendering is inert, checked by a real parser for each format.
    checker="$(dirname "$self")/hostile_text.py"
    python3 "$checker" make "$good" hostile.json || { fail "cannot make hostile.json"; exit 1; }
    "$ipcheck" report render hostile.json --format html -o report.html || fail "render html failed"
    "$ipcheck" report render hostile.json --format md -o report.md || fail "render md failed"
    "$ipcheck" report render hostile.json --format junit -o junit.xml || fail "render junit failed"
    "$ipcheck" report diff "$good" hostile.json >diff.txt || [ $? -eq 1 ] || fail "report diff failed"
    "$ipcheck" report diff "$good" hostile.json --format md >diff.md || [ $? -eq 1 ] || fail "report diff md failed"
    "$ipcheck" report history "$good" hostile.json >history.txt || fail "report history failed"
    "$ipcheck" report history "$good" hostile.json --format md >history.md || fail "report history md failed"
    "$ipcheck" report history "$good" hostile.json --format html -o history.html || fail "report history html failed"
    "$ipcheck" store add hostile.json --db store.db >store.txt 2>&1 || fail "store add failed"
    "$ipcheck" store ls --db store.db >>store.txt 2>&1 || fail "store ls failed"
    python3 "$checker" xml junit.xml || fail "junit.xml"
    for t in diff.txt history.txt store.txt; do python3 "$checker" term "$t" || fail "$t"; done
    if command -v cmark >/dev/null; then
      for m in report.md diff.md history.md; do
        cmark --unsafe "$m" >"$m.html" || fail "cmark $m"
        python3 "$checker" md-html "$m.html" || fail "$m"
      done
    else
      fail "cmark (a CommonMark parser) is not installed; ci/setup installs it"
    fi
    browser=""
    for name in chromium chromium-browser google-chrome; do
      command -v "$name" >/dev/null && browser="$(command -v "$name")" && break
    done
    if [ -z "$browser" ]; then
      fail "no Chromium found; ci/setup installs Debian's chromium"
    else
      flags=(--headless=new --disable-gpu --no-first-run --no-default-browser-check --user-data-dir="$work/profile")
      [ "$(id -u)" -eq 0 ] && flags+=(--no-sandbox)
      for h in report.html history.html; do
        timeout 90 "$browser" "${flags[@]}" --virtual-time-budget=2000 --dump-dom "file://$work/$h" \
          >"$h.dom" 2>>chromium.log || fail "chromium --dump-dom $h exited with $?"
        python3 "$checker" dom "$h.dom" || fail "$h"
      done
    fi
    ;;

  terminal-lines)
    # Every line a report command prints goes through the one terminal escaper: report
    # compare's first line (the adapters' names) and report first-bad's header (case id,
    # adapter, driver, GPUs, versions, reason) included.
    checker="$(dirname "$self")/hostile_text.py"
    python3 "$checker" make "$good" hostile.json || { fail "cannot make hostile.json"; exit 1; }
    "$ipcheck" report compare "$good" hostile.json >compare.txt 2>&1 || [ $? -eq 1 ] || fail "report compare failed: $(head -c 300 compare.txt)"
    "$ipcheck" report compare hostile.json "$good" --all >>compare.txt 2>&1 || [ $? -eq 1 ] || fail "report compare --all failed"
    # A case id a command line can carry (no NUL): escapes and C1 controls, in a run whose
    # every other field is the hostile payload.
    python3 - <<'PY'
import json
doc = json.load(open("hostile.json"))
doc["cases"][0]["id"] = "memory.x\x1b]0;PWNED-title\x07\x1b[31mred\u009b2J"
json.dump(doc, open("hostile-id.json", "w"))
open("id.txt", "w").write(doc["cases"][0]["id"])
PY
    "$ipcheck" store add hostile-id.json --db store.db >/dev/null 2>&1 || fail "store add failed"
    id="$(cat id.txt)"
    "$ipcheck" report first-bad "$id" --db store.db >first-bad.txt 2>&1 || [ $? -eq 1 ] || fail "report first-bad failed: $(head -c 300 first-bad.txt)"
    grep -q "ipcheck report first-bad" first-bad.txt || fail "report first-bad printed no header: $(head -c 300 first-bad.txt)"
    for t in compare.txt first-bad.txt; do
      if python3 "$checker" term "$t"; then echo "ok  $t: no control sequence"; else fail "$t"; fi
    done
    ;;

  runner-stopped)
    # The runner stopped (SIGSTOP) for 5 s while event.pending's consumer waits for the
    # signal: the roles' messages wait on the runner ("waiting" never reaches the producer),
    # so the consumer's 3-s wait runs out. That is never the adapter's fail: the attempt is
    # kept as an `error` naming the runner, and the case runs again (and passes). The stop
    # comes right after the consumer starts (its handle, open and 150-ms wait come first);
    # a few offsets are tried until one meets the consumer's wait.
    staged=0
    for off in 0 0.03 0.06 0.1; do
      rm -rf run
      "$ipcheck" run --adapter ref --filter event.pending --exact --audit proc --quiet --out run >run.out 2>&1 &
      runner=$!
      for _ in $(seq 3000); do pgrep -P "$runner" -f -- "--role consumer" >/dev/null && break; sleep 0.005; done
      sleep "$off"
      kill -STOP "$runner" && sleep 5 && kill -CONT "$runner"
      wait "$runner"
      verdict="$(python3 - run/results.json "$off" <<'PY'
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["cases"] if c["id"] == "event.pending"][0]
attempts = c.get("attempts", [])
print("stopped %s s after the consumer started: %s; attempts: %s" % (sys.argv[2], c["status"],
      ", ".join("%s (%s)" % (a["status"], a.get("reason", "")[:170]) for a in attempts) or "one"))
if c["status"] in ("fail", "timeout") or any(a["status"] in ("fail", "timeout") for a in attempts):
    print("CHARGED: the runner's stop was charged to the adapter: " + c.get("reason", ""))
elif attempts and attempts[0]["status"] == "error" and "the runner itself was stopped" in attempts[0].get("reason", ""):
    print("STAGED")
PY
)"
      echo "$verdict"
      case "$verdict" in
        *CHARGED*) fail "$verdict"; break ;;
        *STAGED*) staged=1; break ;;
      esac
    done
    [ "$failures" -gt 0 ] || [ "$staged" = 1 ] ||
      { echo "SKIP: no stop met the consumer's wait (the machine's timing); nothing was charged to the adapter"; exit 0; }
    ;;

  machine-limits)
    # Limits that would turn a driver's allocation into EFBIG or ENOMEM make every case
    # `error` naming the limit, never the adapter's `fail`; a bad adapter option value is
    # exit 2 before any case, like an unknown key.
    # Before this check: -f 16384 (16 MiB) made memory.roundtrip.64m `fail` (EFBIG), -v 200000
    # (195 MiB) `fail` (std::bad_alloc in a role).
    for lim in "-f 16384:file size limit \(ulimit -f\)" "-v 200000:address space limit \(ulimit -v\)"; do
      flag="${lim%%:*}" want="${lim#*:}"
      rm -rf run
      out="$(bash -c "ulimit $flag && exec \"\$0\" run --adapter ref --filter 'memory.roundtrip.*' --audit proc --quiet --out run" "$ipcheck" 2>&1)"
      rc=$?
      [ "$rc" -eq 1 ] || fail "ulimit $flag: exit $rc, expected 1 (harness errors)"$'\n'"$out"
      [ -s run/results.json ] || { fail "ulimit $flag: no results.json"; continue; }
      errors="$(grep -c '"status": "error"' run/results.json)"
      others="$(grep -cE '"status": "(pass|fail|crash|skip)"' run/results.json)"
      [ "$errors" -ge 1 ] && [ "$others" -eq 0 ] || { fail "ulimit $flag: $errors error and $others other statuses"; continue; }
      grep -qE "$want" run/results.json || { fail "ulimit $flag: the reason does not name the $want"; continue; }
      echo "ok  ulimit $flag: $errors cases error, naming the $(grep -oE -m1 "$want" run/results.json)"
    done
    expect 2 "--adapter-opt handle='bogus' is no valid value for adapter ze; use fd, opaque or auto" -- \
      "$ipcheck" run --adapter ze --adapter-opt handle=bogus --out run2
    expect 2 "--adapter-opt driver='x1' is no valid value for adapter ze; give a whole number" -- \
      "$ipcheck" info --adapter ze --adapter-opt driver=x1
    expect 2 "--adapter-opt staging='yes' is no valid value for adapter vk; use 1, on, 0 or off" -- \
      "$ipcheck" run --adapter vk --adapter-opt staging=yes --out run2
    expect 2 "--adapter-opt devices='' is no valid value for adapter ref" -- \
      "$ipcheck" fuzz --adapter ref --runs 1 --adapter-opt devices=
    [ ! -e run2 ] || fail "a refused run made its --out folder"
    ;;

  store-writers)
    # Eight `store add` at once on a new store: every one succeeds (creation in one exclusive
    # transaction); a store locked past --busy-timeout is "busy"; --db must name a file.
    for i in 1 2 3 4 5 6 7 8; do
      python3 - "$good" "run$i.json" "$i" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["run"]["start"] = "2026-01-0%sT00:00:00Z" % sys.argv[3]  # another run: another digest
json.dump(doc, open(sys.argv[2], "w"))
PY
    done
    # Five rounds, each on a new store (before the fix, about one round in five lost a writer
    # to "table meta already exists").
    for round in 1 2 3 4 5; do
      rm -f many.db
      pids=()
      for i in 1 2 3 4 5 6 7 8; do
        "$ipcheck" store add "run$i.json" --db many.db >"add$i.out" 2>&1 &
        pids+=($!)
      done
      okays=0
      for i in 1 2 3 4 5 6 7 8; do
        if wait "${pids[$((i - 1))]}"; then okays=$((okays + 1)); else fail "round $round: store add $i: $(cat "add$i.out")"; fi
      done
      n="$("$ipcheck" store ls --db many.db --format json | grep -c '"digest"')"
      [ "$n" -eq 8 ] || fail "round $round: the store holds $n runs, expected 8"
      echo "ok  round $round: 8 concurrent store add on a new store: $okays succeeded, $n runs stored"
    done
    # A writer that holds the lock: the next add waits --busy-timeout, then says busy.
    python3 - many.db <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open("locked", "w").close()
time.sleep(8)
db.execute("ROLLBACK")
PY
    holder=$!
    for _ in $(seq 100); do [ -e locked ] && break; sleep 0.1; done
    expect 2 "many.db: the store is busy: another process held its lock for longer than the busy timeout; try again, or wait longer with --busy-timeout S" -- \
      "$ipcheck" store add run1.json --db many.db --busy-timeout 0.5
    expect 0 "already stored as run" -- "$ipcheck" store add run1.json --db many.db --busy-timeout 30
    wait "$holder"
    mkdir folder
    expect 2 "--db is empty: name the store's file" -- "$ipcheck" store add run1.json --db ""
    expect 2 "folder: is a folder; --db names the store's file \(e.g. folder/results.db\)" -- \
      "$ipcheck" store add run1.json --db folder
    expect 2 "is a folder" -- "$ipcheck" store ls --db folder
    ;;

  role-privileges)
    # A role runs with no_new_privs, no capability (Yama ptrace_scope 2 aside: CAP_SYS_PTRACE
    # only), default signal dispositions and the allow-listed environment: a CI secret of the
    # runner's environment never reaches it.
    selftest="$(dirname "$ipcheck")/ipcheck-selftest"
    [ -x "$selftest" ] || { fail "no $selftest: build the ipcheck-selftest target"; exit 1; }
    AWS_SECRET_ACCESS_KEY=hostile-secret GITHUB_TOKEN=hostile-token IPCHECK_ROLE_ENV=EXTRA_FOR_ROLES \
      EXTRA_FOR_ROLES=1 bash -c 'trap "" XFSZ; exec "$0" run --adapter ref --filter selftest.privileges --exact --audit proc --quiet --out run' "$selftest" ||
      fail "the selftest run failed"
    obs() { python3 -c 'import json,sys; c=[c for c in json.load(open("run/results.json"))["cases"] if c["id"]=="selftest.privileges"][0]; print(c.get("observations",{}).get(sys.argv[1],"(none)"))' "$1"; }
    [ "$(obs NoNewPrivs)" = 1 ] || fail "NoNewPrivs is '$(obs NoNewPrivs)', expected 1"
    keep=0000000000000000
    [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null)" = 2 ] && keep=0000000000080000
    for set in CapEff CapPrm CapBnd CapInh CapAmb; do
      [ "$(obs $set)" = "$keep" ] || fail "$set is '$(obs $set)', expected $keep"
    done
    [ "$(obs SigIgn)" = 0000000000000000 ] || fail "SigIgn is '$(obs SigIgn)': the role inherited ignored signals"
    envs="$(obs environment)"
    for secret in AWS_SECRET_ACCESS_KEY GITHUB_TOKEN; do
      ! grep -qw "$secret" <<<"$envs" || fail "$secret reached the role"
    done
    grep -qw PATH <<<"$envs" || fail "PATH did not reach the role: $envs"
    grep -qw EXTRA_FOR_ROLES <<<"$envs" || fail "IPCHECK_ROLE_ENV did not let EXTRA_FOR_ROLES through: $envs"
    echo "ok  role: NoNewPrivs 1, CapEff/CapPrm/CapBnd $keep, SigIgn 0, environment: $envs"
    ;;

  pg-server-stop)
    # ci/pg-server runs as root and its server as an unprivileged user, who can write the
    # server's postmaster.pid: a root process's pid planted there is never signalled, and the
    # real server is stopped all the same (never left running with its folder gone).
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the script signals as root only there)"; exit 0; }
    pg_server="$(dirname "$self")/../../ci/pg-server"
    rc=0
    "$pg_server" start state >start.out 2>&1 || rc=$?
    [ "$rc" -eq 77 ] && { echo "SKIP: no PostgreSQL server binaries (apt-get install postgresql)"; exit 0; }
    [ "$rc" -eq 0 ] || { fail "ci/pg-server start failed: $(cat start.out)"; exit 1; }
    folder="$(cat state/server)"
    server="$(head -n 1 "$folder/data/postmaster.pid")"
    sleep 300 &
    victim=$!
    pg_user="$(stat -c %U "$folder/data")"
    runuser -u "$pg_user" -- sed -i "1s/.*/$victim/" "$folder/data/postmaster.pid" || fail "could not plant the pid as $pg_user"
    "$pg_server" stop state >stop.out 2>&1 || fail "ci/pg-server stop failed: $(cat stop.out)"
    if kill -0 "$victim" 2>/dev/null; then echo "ok  root's sleep $victim (planted in postmaster.pid by $pg_user) not signalled"
    else fail "ci/pg-server stop killed root's process $victim, whose pid $pg_user wrote into postmaster.pid"; fi
    kill "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
    if [ -d "/proc/$server" ] && tr '\0' ' ' <"/proc/$server/cmdline" | grep -qF "$folder/data"; then
      fail "the server (pid $server) was left running"; kill -KILL "$server"
    else echo "ok  the server (pid $server) stopped"; fi
    [ ! -e "$folder" ] || fail "$folder was not removed"
    ;;

  store-passwords)
    # A PostgreSQL password in every form a URI can hold it (user info with '?', '#', '/' or
    # '@'; password=, %70assword=, an encoded value, sslpassword=) never shows: not in store add,
    # store ls (text and JSON), nor in an error. On a server of our own (trust authentication:
    # the password is never checked, only never shown); without PostgreSQL, the errors only.
    pg_server="$(dirname "$self")/../../ci/pg-server"
    trap '"$pg_server" stop "$work/state" >/dev/null 2>&1' EXIT
    rc=0
    "$pg_server" start state >start.out 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || { fail "ci/pg-server start failed: $(cat start.out)"; exit 1; }
    if [ "$rc" -eq 0 ] && "$ipcheck" store ls --db "$(cat state/url)" 2>&1 | grep -q "without PostgreSQL support"; then rc=77; fi
    if [ "$rc" -eq 0 ]; then host="$(cat state/server)"; else
      host=/nonexistent-ipcheck-socket-dir
      echo "note: no PostgreSQL server or no PostgreSQL support here: only the errors are checked, not store add and store ls"
    fi
    check_quiet() { # SECRET WHAT FILE
      if grep -qF -- "$1" "$3"; then fail "$2 shows the password '$1': $(head -c 400 "$3")"; else echo "ok  $2: no '$1'"; fi
    }
    forms=("ipcheck:pa?ss@/postgres?host=$host" "pa?ss"
           "ipcheck:pa#ss@/postgres?host=$host" "pa#ss"
           "ipcheck:p%61ss%3Fw0rd@/postgres?host=$host" "pass?w0rd"
           "/postgres?host=$host&user=ipcheck&password=s3cret" "s3cret"
           "/postgres?host=$host&user=ipcheck&%70assword=s3cret" "s3cret"
           "/postgres?host=$host&user=ipcheck&password=s%33cr%65t" "s3cret"
           "/postgres?host=$host&user=ipcheck&sslpassword=k3ypass" "k3ypass")
    for ((i = 0; i < ${#forms[@]}; i += 2)); do
      db="postgresql://${forms[i]}" secret="${forms[i + 1]}"
      "$ipcheck" store add "$good" --db "$db" >add.out 2>&1
      add_rc=$?
      check_quiet "$secret" "store add ($add_rc) of ${forms[i]%%@*}" add.out
      if [ "$rc" -eq 0 ]; then
        [ "$add_rc" -eq 0 ] || fail "store add failed: $(cat add.out)"
        "$ipcheck" store ls --db "$db" >ls.out 2>&1 || fail "store ls failed: $(cat ls.out)"
        check_quiet "$secret" "store ls" ls.out
        grep -qF '***' ls.out || fail "store ls does not name the store redacted: $(head -3 ls.out)"
        "$ipcheck" store ls --db "$db" --format json >ls.json 2>&1 || fail "store ls --format json failed: $(cat ls.json)"
        check_quiet "$secret" "store ls --format json" ls.json
      fi
    done
    # A '/' or '@' in the user info's password: libpq would end the password there and take the
    # rest for a host (and quote it in its error); refused before connecting.
    for pass in pa/ss pa@ss; do
      expect 2 "percent-encode those characters" -- "$ipcheck" store ls --db "postgresql://ipcheck:$pass@/postgres?host=$host"
      "$ipcheck" store ls --db "postgresql://ipcheck:$pass@/postgres?host=$host" >err.out 2>&1
      check_quiet "$pass" "the error for a password with '${pass:2:1}'" err.out
      check_quiet "ss@" "the error for a password with '${pass:2:1}'" err.out
    done
    ;;

  store-lies)
    # A store is not trusted for what its columns say: a hand-edited source store (its digest
    # and summary columns) is refused by store copy, naming the run and the column; and store add
    # never answers "already stored" for a run whose stored results are another run's.
    python3 - "$good" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for name, start in (("a.json", "2026-01-01T00:00:00Z"), ("b.json", "2026-01-02T00:00:00Z")):
    doc["run"]["start"] = start
    json.dump(doc, open(name, "w"))
PY
    "$ipcheck" store add b.json --db scratch.db >/dev/null || fail "store add b.json failed"
    digest_b="$(sqlite3 scratch.db 'SELECT digest FROM runs')"
    "$ipcheck" store add a.json --db src.db >/dev/null || fail "store add a.json failed"
    sqlite3 src.db "UPDATE runs SET digest = '$digest_b', total = 999, unexpected = 0" || fail "could not edit src.db"
    expect 2 "src.db: run 1: digest is '$digest_b', the results say '[0-9a-f]{64}' \(the store was edited or is damaged\); not copied" -- \
      "$ipcheck" store copy --from src.db --to dst.db
    if [ -e dst.db ]; then
      n="$(sqlite3 dst.db 'SELECT count(*) FROM runs' 2>/dev/null)"
      [ "${n:-0}" -eq 0 ] || fail "store copy copied $n run(s) of the edited store into dst.db"
    fi
    expect 2 "src.db: run 1 has this run's digest [0-9a-f]{12} but other results \(the store was edited or is damaged\): this run is not stored" -- \
      "$ipcheck" store add b.json --db src.db
    # The edited summary alone (the digest true): refused by copy too, naming the column.
    "$ipcheck" store add a.json --db src2.db >/dev/null || fail "store add a.json failed"
    sqlite3 src2.db "UPDATE runs SET total = 999"
    expect 2 "src2.db: run 1: total is '999', the results say '[0-9]+'" -- "$ipcheck" store copy --from src2.db --to dst2.db
    ;;

  role-user)
    # Under a root run a role owns nothing (issue 41): it runs as an unprivileged uid, and
    # from inside it cannot read or append to a root-only file, read /etc/shadow, open
    # /etc/passwd for writing, write /proc/sys, or signal a process of another user.
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (roles change their user only under a root runner)"; exit 0; }
    selftest="$(dirname "$ipcheck")/ipcheck-selftest"
    [ -x "$selftest" ] || { fail "no $selftest: build the ipcheck-selftest target"; exit 1; }
    echo "root's secret" >root-only
    chmod 600 root-only
    sleep 300 &
    other=$!
    IPCHECK_SELFTEST_ROOT_ONLY="$work/root-only" IPCHECK_SELFTEST_OTHER_PID="$other" \
      "$selftest" run --adapter ref --filter selftest.privileges --exact --audit proc --quiet --out run ||
      fail "the selftest run failed"
    obs() { python3 -c 'import json,sys; c=[c for c in json.load(open("run/results.json"))["cases"] if c["id"]=="selftest.privileges"][0]; print(c.get("observations",{}).get(sys.argv[1],"(none)"))' "$1"; }
    uid="$(obs Uid)"
    echo "role: Uid $uid, Gid $(obs Gid), Groups '$(obs Groups)'"
    read -r ruid euid suid fsuid <<<"$uid"
    for u in "$ruid" "$euid" "$suid" "$fsuid"; do
      case "$u" in '' | 0 | *[!0-9]*) fail "the role's /proc/self/status Uid is '$uid': not an unprivileged uid"; break ;; esac
    done
    for probe in read_root_only append_root_only read_shadow write_passwd write_proc_sys signal_other_uid; do
      got="$(obs probe.$probe)"
      case "$got" in
        EACCES | EPERM | EROFS) echo "ok  $probe: $got" ;;
        *) fail "$probe from inside a role: $got (expected a refusal)" ;;
      esac
    done
    kill -0 "$other" || fail "the root process $other is gone"
    kill "$other"; wait "$other" 2>/dev/null
    home="$(obs home)"
    case "$home" in */ipcheck-role-home.*) [ ! -e "$home" ] || fail "the role's temporary home $home was left" ;;
      *) fail "the role's HOME is '$home', not a temporary home of its own" ;; esac
    ;;

  store-hung-server)
    # A PostgreSQL server that stops answering (SIGSTOP, as a hung host would) inside an add's
    # transaction, at its commit: store add gives up in bounded time (--busy-timeout S and 30 s
    # more) with exit 2, saying the add may have landed; before the transaction (the server
    # stopped from the start): exit 2 in bounded time too.
    pg_server="$(dirname "$self")/../../ci/pg-server"
    stopped=""
    trap '[ -z "$stopped" ] || kill -CONT $stopped 2>/dev/null; rm -f "$work/paused"; "$pg_server" stop "$work/state" >/dev/null 2>&1' EXIT
    rc=0
    "$pg_server" start state >start.out 2>&1 || rc=$?
    # Every check of this class needs a server: without one it skips, saying why (never passes).
    [ "$rc" -eq 77 ] && { echo "SKIP: no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql"; exit 0; }
    [ "$rc" -eq 0 ] || { fail "ci/pg-server start failed: $(cat start.out)"; exit 1; }
    if "$ipcheck" store ls --db "$(cat state/url)" 2>&1 | grep -q "without PostgreSQL support"; then
      echo "SKIP: this ipcheck was built without PostgreSQL support (libpq-dev missing at configure time)"; exit 0
    fi
    python3 - "$good" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for i in (1, 2, 3):
    doc["run"]["start"] = "2026-02-%02dT00:00:00Z" % i
    json.dump(doc, open("run%d.json" % i, "w"))
PY
    db="$(cat state/url)"
    "$ipcheck" store add run1.json --db "$db" >add1.out 2>&1 || fail "store add run1: $(cat add1.out)"
    server="$(cut -d' ' -f1 state/pid 2>/dev/null || head -n 1 "$(cat state/server)/data/postmaster.pid")"
    IPCHECK_STORE_TEST_PAUSE_BEFORE_COMMIT="$work/paused" timeout 120 "$ipcheck" store add run2.json --db "$db" --busy-timeout 1 >add2.out 2>&1 &
    adder=$!
    for _ in $(seq 600); do [ -e paused ] && break; sleep 0.1; done
    [ -e paused ] || fail "the add never reached its commit: $(cat add2.out)"
    stopped="$server $(pgrep -P "$server" | tr '\n' ' ')"
    kill -STOP $stopped
    t0=$(date +%s)
    rm -f paused
    rc=0
    wait "$adder" || rc=$?
    t=$(( $(date +%s) - t0 ))
    kill -CONT $stopped; stopped=""
    if [ "$rc" -eq 124 ]; then fail "store add hung on a server that stopped answering at its commit (killed after 120 s)"
    elif [ "$rc" -ne 2 ]; then fail "store add exited $rc on a stopped server, expected 2: $(cat add2.out)"
    elif ! grep -q "did not answer within 31 s" add2.out || ! grep -q "whether it committed is unknown" add2.out; then
      fail "the error does not say the server stopped answering and that the add may have landed: $(cat add2.out)"
    else echo "ok  a server stopped at the commit: exit 2 after $t s: $(head -c 300 add2.out)"; fi
    # Stopped before the add begins: the connection's own limit.
    stopped="$server $(pgrep -P "$server" | tr '\n' ' ')"
    kill -STOP $stopped
    rc=0
    timeout 120 "$ipcheck" store add run3.json --db "$db" --busy-timeout 1 >add3.out 2>&1 || rc=$?
    kill -CONT $stopped; stopped=""
    if [ "$rc" -eq 124 ]; then fail "store add hung on a stopped server (killed after 120 s)"
    elif [ "$rc" -ne 2 ]; then fail "store add exited $rc on a stopped server, expected 2: $(cat add3.out)"
    else echo "ok  a server stopped before the add: exit 2: $(head -c 300 add3.out)"; fi
    # (A failed first add on SQLite leaving no store file: class full-disk.)
    ;;

  reproducer-paths)
    # A results file's reproducer stays inside its folder: `../../x.repro` (there, and a
    # valid reproducer) is refused by fuzz --export-c, never read; and a campaign merged into a
    # run's results.json from a folder beside it has its reproducers copied in (findings/),
    # never named with '..'.
    fixtures="$(dirname "$self")/../../fuzz/tests/fixtures"
    mkdir -p a/b
    cp "$fixtures/cuda-offset-learned.repro" outside.repro
    python3 - "$good" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["fuzz"] = {"status": "completed", "findings": [
    {"id": "planted", "outcome": "confused_deputy", "reproducer": "../../outside.repro"},
    {"id": "absolute", "outcome": "confused_deputy", "reproducer": "/etc/hostname.repro"}]}
json.dump(doc, open("a/b/results.json", "w"))
PY
    expect 2 "names reproducer '../../outside.repro', not a \*.repro inside the results' folder" -- \
      "$ipcheck" fuzz --export-c planted --results a/b/results.json -o a/b/planted.c
    [ ! -e a/b/planted.c ] || fail "fuzz --export-c wrote a program from a reproducer outside the results' folder"
    mkdir -p a/b/findings
    ln -s ../../../outside.repro a/b/findings/linked.repro
    python3 - <<'PY'
import json
doc = json.load(open("a/b/results.json"))
doc["fuzz"]["findings"].append({"id": "linked", "outcome": "confused_deputy", "reproducer": "findings/linked.repro"})
json.dump(doc, open("a/b/results.json", "w"))
PY
    expect 2 "names reproducer 'findings/linked.repro', not a \*.repro inside the results' folder" -- \
      "$ipcheck" fuzz --export-c linked --results a/b/results.json -o a/b/linked.c
    # The merge: a campaign in a folder beside the run's.
    "$ipcheck" run --adapter ref --filter memory.roundtrip.page --exact --audit proc --quiet --out run >/dev/null ||
      fail "ipcheck run failed"
    defects="$(dirname "$ipcheck")/ipcheck-defects"
    if [ -x "$defects" ]; then
      IPCREF_DEFECT=crash_on_truncated "$defects" fuzz --adapter ref --runs 3000 --minimise-time 5 --quiet \
        --out campaign --results run/results.json >fuzz.out 2>&1
      python3 - <<'PY' || fail "the merged results name a reproducer outside their folder"
import json, os, sys
doc = json.load(open("run/results.json"))
named = [f["reproducer"] for f in doc.get("fuzz", {}).get("findings", []) if isinstance(f.get("reproducer"), str)]
print("merged reproducers: %s" % (", ".join(named) or "none"))
bad = [n for n in named if n.startswith("/") or ".." in n.split("/") or not os.path.isfile(os.path.join("run", n))]
if bad or not named:
    print("outside or missing: %s" % bad)
    sys.exit(1)
PY
    else
      fail "no $defects: build the ipcheck-defects target"
    fi
    ;;

  deep-json)
    # 100,000 nested arrays: every JSON reader refuses the file before parsing it (exit 2,
    # naming it and the depth), never a stack overflow.
    deep="$(head -c 100000 /dev/zero | tr '\0' '[')$(head -c 100000 /dev/zero | tr '\0' ']')"
    results_doc '' ", \"deep\": $deep" >deep.json
    msg="nests objects and arrays deeper than 128 levels"
    expect 2 "results file 'deep.json' $msg" -- "$ipcheck" report render deep.json
    expect 2 "$msg" -- "$ipcheck" report render "$good" --baseline deep.json
    expect 2 "$msg" -- "$ipcheck" report diff "$good" deep.json
    expect 2 "$msg" -- "$ipcheck" report merge deep.json "$good" -o merged.json
    expect 2 "$msg" -- "$ipcheck" report baseline deep.json -o baseline.json
    expect 2 "$msg" -- "$ipcheck" report history "$good" deep.json
    expect 2 "$msg" -- "$ipcheck" store add deep.json --db runs.sqlite
    printf '{"schema": "ipcheck.fuzz-repro/1", "setup": "ipcheck.fuzz-setup/1", "input": %s}\n' "$deep" >deep.repro
    expect 2 "reproducer 'deep.repro' $msg" -- "$ipcheck" fuzz --replay deep.repro
    expect 2 "$msg" -- "$ipcheck" fuzz --export-c deep.repro -o deep.c
    expect 2 "$msg" -- "$ipcheck" fuzz --adapter ref --runs 10 --results deep.json --out fuzz
    expect 2 "$msg" -- "$ipcheck" bench --adapter ref --brief --results deep.json --out bench
    mkdir corpus && cp deep.repro corpus/
    expect 0 "corpus file corpus/deep.repro skipped: .*$msg" -- \
      "$ipcheck" fuzz --adapter ref --runs 50 --corpus corpus --quiet --out fuzz
    printf '%s fail why\n' "$deep" >deep.txt  # not JSON: a line like any other
    expect 1 "1 stale" -- "$ipcheck" list --expectations --file deep.txt
    expect 2 "$msg" -- "$ipcheck" list --expectations --file deep.txt --results deep.json
    for f in merged.json baseline.json deep.c; do [ ! -e "$f" ] || fail "a refused reader wrote $f"; done
    ;;

  not-utf8)
    # A byte that is not UTF-8 in an expectations file, a path, an option value or the
    # environment: warned about and written as \xNN; the run's results are always written.
    printf 'memory.open.repeat  fail  Caf\xe9 du d\xe9faut: known (https://example.org)\n' >latin1.txt
    expect 0 "warning: --expectations: latin1.txt:1: the line is not UTF-8" -- \
      "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --expectations latin1.txt --out run-latin1
    grep -q 'Caf\\\\xe9' run-latin1/results.json 2>/dev/null || grep -q 'latin1.txt' run-latin1/results.json ||
      fail "run-latin1/results.json is missing"
    out=$'run-\xe9t\xe9'
    expect 0 "option '--out' 'run-\\\\xe9t\\\\xe9' is not UTF-8" -- \
      "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --out "$out"
    [ -s "$out/results.json" ] && [ -s "$out/report.html" ] && [ -s "$out/junit.xml" ] ||
      fail "a run with a Latin-1 --out lost its results"
    expect 0 "environment variable IPCHECK_REF_DEVICES is not UTF-8" -- env $'IPCHECK_REF_DEVICES=ref0=all;r\xe9f1=all' \
      LANG=$'C.\xe9' "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc --out run-env
    [ -s run-env/results.json ] || fail "a run with a Latin-1 environment lost its results"
    expect 2 "--param cycles is 'x\\\\xff'; give a whole number from 1 to 100000" -- \
      "$ipcheck" run --adapter ref --filter stress.open_close --exact --param $'cycles=x\xff' --out run-param
    expect 0 "option '--adapter-opt' 'devices=ref0=all;r\\\\xe9f1=all' is not UTF-8" -- \
      "$ipcheck" run --adapter ref --filter memory.open.repeat --exact --audit proc \
      --adapter-opt $'devices=ref0=all;r\xe9f1=all' --out run-opt
    [ -s run-opt/results.json ] || fail "a run with a Latin-1 --adapter-opt lost its results"
    grep -q 'r\\\\xe9f1' run-env/results.json || fail "the Latin-1 device name is not escaped in run-env/results.json"
    # Every file written is UTF-8; each renders and is stored.
    for f in run-latin1 run-env run-opt "$out"; do
      [ -s "$f/results.json" ] || continue
      for g in "$f"/*; do iconv -f UTF-8 -t UTF-8 "$g" >/dev/null 2>&1 || fail "$g is not UTF-8"; done
      "$ipcheck" report render "$f/results.json" --format junit -o "$f.xml" || fail "rendering $f failed"
      "$ipcheck" store add "$f/results.json" --db runs.sqlite >/dev/null || fail "storing $f failed"
    done
    # A results file holding such text (another tool wrote it) is read with the bytes escaped
    # (exit 1: its one case is absent from the baseline and fails, a new failure).
    results_doc $'{"id": "a.b", "status": "fail", "reason": "bad \xff byte"}' >raw.json
    expect 1 "raw.json': text that is not UTF-8 is read with its bad bytes as" -- \
      "$ipcheck" report diff "$good" raw.json -o raw-diff.json --format json
    grep -q 'bad \\\\xff byte' raw-diff.json || fail "report diff did not escape the bad byte"
    ;;

  replay-library)
    # A reproducer's adapter options never choose code or a path: a replay naming a library
    # loads nothing (the library's constructor would write a marker) and says what it ignored.
    if ! command -v cc >/dev/null; then
      echo "SKIP: no C compiler to build the marker library"
      exit 0
    fi
    # The marker goes into a folder every user may write: the fuzz workers that load the
    # library are roles, which under a root run have a user of their own.
    mkdir -p mark && chmod 1777 mark
    printf '#include <stdio.h>\n__attribute__((constructor)) static void mark(void) { FILE* f = fopen("%s/mark/LOADED", "w"); if (f) fclose(f); }\n' \
      "$PWD" >marker.c
    cc -shared -fPIC -o libmarker.so marker.c || { echo "SKIP: cc cannot build a shared library"; exit 0; }
    for adapter in cuda vk ur; do
      key=library
      [ "$adapter" != cuda ] && key=loader
      printf '{"schema": "ipcheck.fuzz-repro/1", "adapter": "%s", "setup": "ipcheck.fuzz-setup/1", "transport": "pidfd",
        "adapter_options": {"%s": "%s/libmarker.so", "colour": "green"}, "expect": "confused_deputy",
        "input": {"base": "producer.export[0]", "changes": [], "length": 64, "tail": ""}}\n' \
        "$adapter" "$key" "$PWD" >"$adapter.repro"
      out="$(timeout 120 "$ipcheck" fuzz --replay "$adapter.repro" 2>&1)"
      echo "$out" | head -5
      grep -q "ignored  the reproducer's adapter option $key=$PWD/libmarker.so (it names a library" <<<"$out" ||
        fail "$adapter: the replay did not say it ignored $key="
      grep -q "ignored  the reproducer's adapter option colour=green (no option of adapter $adapter)" <<<"$out" ||
        fail "$adapter: the replay did not say it ignored colour="
      [ ! -e mark/LOADED ] || fail "$adapter: replaying $adapter.repro loaded the library it named"
      rm -f mark/LOADED
    done
    # Given on the command line, the same option is the person's choice and is used.
    printf '{"schema": "ipcheck.fuzz-repro/1", "adapter": "cuda", "setup": "ipcheck.fuzz-setup/1",
      "input": {"base": "producer.export[0]", "changes": [], "length": 64, "tail": ""}}\n' >plain.repro
    timeout 120 "$ipcheck" fuzz --replay plain.repro --adapter cuda --adapter-opt "library=$PWD/libmarker.so" >cmdline.out 2>&1
    [ -e mark/LOADED ] || fail "--adapter-opt library= on the command line was not used"$'\n'"$(tail -5 cmdline.out)"
    # A results file names no reproducer outside its folder.
    printf '{"schema": "ipcheck.results/2", "run": {"adapter": "cuda"}, "cases": [], "fuzz": {"findings": [{"id": "x", "reproducer": "/etc/passwd"}]}}\n' >escape.json
    expect 2 "names reproducer '/etc/passwd', not a \*.repro (relative to|inside) the results' folder" -- \
      "$ipcheck" fuzz --export-c x --results escape.json -o x.c
    ;;

  huge-counts)
    # A number that sizes an allocation or a loop is bounded where it is read, named.
    expect 2 "--shard is '1/999999999': the shard count N is at most 10000; give fewer shards" -- \
      "$ipcheck" run --shard 1/999999999 --out run
    expect 2 "CI_NODE_TOTAL is '999999999': the shard count is at most 10000" -- \
      env CI_NODE_INDEX=1 CI_NODE_TOTAL=999999999 "$ipcheck" run --shard auto --out run
    results_doc '' ', "options": {"shard": {"index": 1, "total": 2147483647, "selected": 1}}' >shards.json
    expect 2 "field total .* is 2147483647, not a shard count from 1 to 10000" -- \
      "$ipcheck" report merge shards.json shards.json -o merged.json
    expect 2 "--param cycles is '99999999999'; give a whole number from 1 to 100000 \(the most stress.open_close" -- \
      "$ipcheck" run --filter stress.open_close --exact --param cycles=99999999999 --out run
    changes="$(for i in $(seq 300); do printf '{"field": "fd", "value": "1"},'; done)"
    printf '{"schema": "ipcheck.fuzz-repro/1", "setup": "ipcheck.fuzz-setup/1", "input": {"base": "b", "changes": [%s], "length": 64}}\n' \
      "${changes%,}" >changes.repro
    expect 2 "input.changes has 300 items, more than the 256" -- "$ipcheck" fuzz --replay changes.repro
    tail="$(head -c 140000 /dev/zero | tr '\0' 'a')"
    printf '{"schema": "ipcheck.fuzz-repro/1", "setup": "ipcheck.fuzz-setup/1", "input": {"base": "b", "changes": [], "length": 64, "tail": "%s"}}\n' \
      "$tail" >tail.repro
    expect 2 "input.tail is 70000 bytes, more than 65536" -- "$ipcheck" fuzz --replay tail.repro
    # --timeout, given, limits a case that asks for more (the stress cases: 600 s).
    start=$SECONDS
    expect 1 "timeout" -- "$ipcheck" run --adapter ref --filter stress.open_close --exact --audit proc \
      --param cycles=100000 --timeout 2 --out run-busy
    [ $((SECONDS - start)) -lt 30 ] || fail "--timeout 2 did not cut a long stress case short ($((SECONDS - start)) s)"
    # A stored run whose row claims a huge size: refused naming the field, nothing allocated.
    "$ipcheck" store add "$good" --db runs.sqlite >/dev/null || fail "store add failed"
    if command -v cc >/dev/null; then
      printf '#include <sqlite3.h>\nint main(int c, char** v) { sqlite3* d; if (sqlite3_open(v[1], &d)) return 1;\n  return sqlite3_exec(d, "UPDATE runs SET results_size = 4611686018427387904", 0, 0, 0) != SQLITE_OK; }\n' >damage.c
      if cc -o damage damage.c -lsqlite3 2>/dev/null && ./damage runs.sqlite; then
        expect 2 "field results_size is 4611686018427387904, not a size from 0 to" -- \
          "$ipcheck" report history --db runs.sqlite
      else
        echo "note: cannot build the store-damaging helper (libsqlite3-dev); the blob size bound is fuzzed (store_blob)"
      fi
    fi
    ;;

  *)
    echo "unknown class '$class'"
    exit 2
    ;;
esac

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s) in class $class"
  exit 1
fi
echo "class $class: every check held"
