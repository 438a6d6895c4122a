#!/usr/bin/env bash
# The results store on PostgreSQL through the command line (CTest label store-pg):
#   concurrent   16 `ipcheck store add` at once on a new database, of 8 runs each added twice:
#                each run kept exactly once, every add succeeds; then 16 more over old and new runs
#   server-gone  the server stops (as a crash would) inside an add's transaction, held open by the
#                test hook IPCHECK_STORE_TEST_PAUSE_BEFORE_COMMIT: a clear error naming the store
#                (its password redacted), exit 2; after a restart nothing of that run is there
#   cli          history and first-bad from PostgreSQL equal to SQLite's for the same runs; store
#                copy SQLite -> PostgreSQL -> SQLite equal, a second copy adds nothing; refusals
#
# store_pg.sh TEST IPCHECK PG_STATE DATA OUT
#   PG_STATE: the folder ci/pg-server start wrote (its url); concurrent and cli use that server,
#   server-gone starts its own (it stops it). Exits 77 (skip) without a server.
set -uo pipefail
test="$1" ipcheck="$2" state="$3" data="$4" out="$5"
here="$(cd "$(dirname "$0")" && pwd)"
pg_server="$here/../../ci/pg-server"
if [ -n "${IPCHECK_NO_LIBPQ:-}" ]; then
  echo "SKIP: this ipcheck was built without libpq, so without the PostgreSQL store (install libpq-dev and rebuild)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
cd "$out" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok  $*"; }

# The test server's URL, and a database of our own on it (dropped first if a run left it).
# (Not in a command substitution: its exit would leave the subshell only.)
need_server() { # STATE
  [ -s "$1/url" ] || { echo "SKIP: no PostgreSQL test server ($1/url is missing: ci/pg-server start $1; without PostgreSQL's binaries it skips too)"; exit 77; }
}
psql_() { PGOPTIONS='-c client_min_messages=warning' "$(cat "$state/bin")/psql" -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
database() { # URL NAME: prints the database's URL
  psql_ "$1" -c "DROP DATABASE IF EXISTS $2 WITH (FORCE)" -c "CREATE DATABASE $2" >/dev/null || fail "cannot create database $2"
  echo "${1/\/postgres\?//$2?}"
}

# N runs of the fixture, each another run (another start: another digest).
make_runs() { # FIRST LAST
  python3 - "$data/ze-1.3.29735.json" "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for i in range(int(sys.argv[2]), int(sys.argv[3]) + 1):
    doc["run"]["start"] = "2026-01-%02dT00:00:00Z" % i
    json.dump(doc, open("run%d.json" % i, "w"))
PY
}
cases_per_run="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$data/ze-1.3.29735.json")"

case "$test" in
  concurrent)
    need_server "$state"
    url="$(cat "$state/url")"
    db="$(database "$url" store_concurrent)"
    make_runs 1 12
    # Sixteen adds at once on a database with no store yet: runs 1-8, each twice.
    round() { # NAME RUN...
      local name="$1" pids=() i=0 t0 t1
      shift
      t0=$(date +%s.%N)
      for r in "$@"; do
        i=$((i + 1))
        "$ipcheck" store add "run$r.json" --db "$db" >"$name-$i.out" 2>&1 &
        pids+=($!)
      done
      i=0
      for p in "${pids[@]}"; do
        i=$((i + 1))
        wait "$p" || fail "$name: store add $i failed: $(cat "$name-$i.out")"
      done
      t1=$(date +%s.%N)
      added=$(cat "$name"-*.out | grep -c '^added run')
      already=$(cat "$name"-*.out | grep -c '^already stored as run')
      echo "$name: $# concurrent store add in $(python3 -c "print('%.2f' % ($t1 - $t0))") s: $added added, $already already stored"
    }
    round first 1 2 3 4 5 6 7 8 1 2 3 4 5 6 7 8
    [ "$added" -eq 8 ] && [ "$already" -eq 8 ] || fail "first round: $added added and $already already stored; expected 8 and 8"
    runs="$(psql_ "$db" -c "SELECT count(*), count(DISTINCT digest) FROM runs")"
    [ "$runs" = "8|8" ] || fail "the store holds (runs|distinct digests) $runs, expected 8|8"
    n="$(psql_ "$db" -c "SELECT count(*) FROM cases")"
    [ "$n" -eq $((8 * cases_per_run)) ] || fail "the store holds $n case rows, expected $((8 * cases_per_run))"
    ok "16 concurrent adds of 8 runs (each twice) on a new database: each run kept exactly once ($runs), $n case rows"
    # Sixteen more: runs 5-12 each twice (5-8 are there, 9-12 are new).
    round second 5 6 7 8 9 10 11 12 5 6 7 8 9 10 11 12
    [ "$added" -eq 4 ] && [ "$already" -eq 12 ] || fail "second round: $added added and $already already stored; expected 4 and 12"
    runs="$(psql_ "$db" -c "SELECT count(*), count(DISTINCT digest) FROM runs")"
    [ "$runs" = "12|12" ] || fail "the store holds (runs|distinct digests) $runs, expected 12|12"
    n="$("$ipcheck" store ls --db "$db" --format json | grep -c '"digest"')"
    [ "$n" -eq 12 ] || fail "store ls lists $n runs, expected 12"
    ok "16 concurrent adds over 4 old and 4 new runs: 12 runs, each once"
    ;;

  server-gone)
    own="$out/server"
    pid=""
    # However the test ends: the paused add let go (and ended), the server stopped and removed.
    trap 'rm -f "$out/paused"; [ -z "$pid" ] || kill "$pid" 2>/dev/null; "$pg_server" stop "$own" >/dev/null 2>&1' EXIT
    rc=0
    "$pg_server" start "$own" || rc=$?
    [ "$rc" -eq 77 ] && { echo "SKIP: no PostgreSQL server binaries (apt-get install postgresql)"; exit 77; }
    [ "$rc" -eq 0 ] || fail "ci/pg-server start failed"
    state="$own"
    url="$(cat "$own/url")"
    # The server trusts the socket's users: the password is never checked, only never shown.
    db="$(echo "$url" | sed 's|^postgresql://|postgresql://ipcheck:hunter2@|')"
    make_runs 1 2
    "$ipcheck" store add run1.json --db "$db" >add1.out 2>&1 || fail "store add run1: $(cat add1.out)"
    IPCHECK_STORE_TEST_PAUSE_BEFORE_COMMIT="$out/paused" "$ipcheck" store add run2.json --db "$db" >add2.out 2>&1 &
    pid=$!
    for _ in $(seq 600); do [ -e "$out/paused" ] && break; sleep 0.1; done
    [ -e "$out/paused" ] || fail "the add never reached its commit: $(cat add2.out)"
    written="$(psql_ "$url" -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'")"
    "$pg_server" crash "$own" || fail "could not stop the server"
    rm -f "$out/paused"
    rc=0
    wait "$pid" || rc=$?
    pid=""
    cat add2.out
    [ "$rc" -eq 2 ] || fail "the add exited $rc when its server went away, expected 2"
    grep -q "postgresql://ipcheck:\*\*\*@/postgres?host=" add2.out || fail "the error does not name the store"
    grep -q "lost the connection to the PostgreSQL server while adding run" add2.out || fail "the error does not say what happened"
    grep -q "add it again once the server is back" add2.out || fail "the error does not say what to do"
    ! grep -q hunter2 add2.out || fail "the error shows the password"
    ok "the server stopped inside an add ($written session idle in its transaction): exit 2, the store named, no password"
    "$pg_server" restart "$own" || fail "the server did not start again"
    got="$(psql_ "$url" -c "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM cases), (SELECT count(*) FROM cases WHERE run_id NOT IN (SELECT id FROM runs))")"
    [ "$got" = "1|$cases_per_run|0" ] || fail "after the restart (runs|cases|orphan cases) is $got, expected 1|$cases_per_run|0"
    ok "after the restart: run 1 only, its $cases_per_run case rows, nothing of the half-done add"
    "$ipcheck" store add run2.json --db "$db" >add3.out 2>&1 || fail "adding it again: $(cat add3.out)"
    grep -q '^added run' add3.out || fail "adding it again: $(cat add3.out)"
    ok "adding it again: $(cut -d: -f1 add3.out)"
    ;;

  cli)
    need_server "$state"
    url="$(cat "$state/url")"
    pg="$(database "$url" store_cli)"
    lite="$out/runs.sqlite"
    for f in ze-1.6.31294 ze-1.3.29803 ze-1.3.29735; do
      "$ipcheck" store add "$data/$f.json" --db "$lite" >/dev/null || fail "store add $f (SQLite)"
      "$ipcheck" store add "$data/$f.json" --db "$pg" >/dev/null || fail "store add $f (PostgreSQL)"
    done
    same() { # NAME RC ARGS...: the command on both stores (--db last): the same output and exit status
      local name="$1" want="$2" a=0 b=0
      shift 2
      "$@" --db "$lite" >"$name.sqlite.out" 2>&1 || a=$?
      "$@" --db "$pg" >"$name.pg.out" 2>&1 || b=$?
      [ "$a" -eq "$want" ] && [ "$b" -eq "$want" ] || fail "$name: exit $a (SQLite) and $b (PostgreSQL), expected $want"
      cmp -s "$name.sqlite.out" "$name.pg.out" || fail "$name differs: $(diff "$name.sqlite.out" "$name.pg.out" | head -n 20)"
      ok "$name: the same from SQLite and PostgreSQL ($(wc -c <"$name.pg.out") bytes, exit $a)"
    }
    for f in text md html; do same "history-$f" 0 "$ipcheck" report history --format "$f"; done
    same history-last2 0 "$ipcheck" report history --adapter ze --last 2 --changed
    same first-bad-text 1 "$ipcheck" report first-bad memory.roundtrip.page
    same first-bad-json 1 "$ipcheck" report first-bad memory.roundtrip.page --format json
    same first-bad-never 0 "$ipcheck" report first-bad memory.roundtrip.odd
    grep -q "first bad  1.3.29803  crash" first-bad-text.pg.out || fail "first-bad names another version: $(cat first-bad-text.pg.out)"

    # store copy: SQLite -> PostgreSQL -> SQLite, equal; again: nothing copied.
    pg2="$(database "$url" store_copy)"
    "$ipcheck" store copy --from "$lite" --to "$pg2" >copy1.out 2>&1 || fail "store copy: $(cat copy1.out)"
    grep -q "^copied 3 runs from $lite to postgresql://.*(0 already there)" copy1.out || fail "store copy said: $(cat copy1.out)"
    "$ipcheck" store copy --from "$lite" --to "$pg2" >copy2.out 2>&1 || fail "store copy again: $(cat copy2.out)"
    grep -q "^copied 0 runs .*(3 already there)" copy2.out || fail "store copy again said: $(cat copy2.out)"
    "$ipcheck" store copy --from "$pg2" --to "$out/back.sqlite" >copy3.out 2>&1 || fail "store copy back: $(cat copy3.out)"
    grep -q "^copied 3 runs" copy3.out || fail "store copy back said: $(cat copy3.out)"
    for s in "$lite" "$pg2" "$out/back.sqlite"; do
      "$ipcheck" store ls --db "$s" --format json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
print(json.dumps([{k: v for k, v in r.items() if k != "id"} for r in doc["runs"]], sort_keys=True))' >>ls.out ||
        fail "store ls $s"
    done
    [ "$(sort -u ls.out | wc -l)" -eq 1 ] || fail "the runs differ after SQLite -> PostgreSQL -> SQLite: $(cat ls.out)"
    "$ipcheck" report history --db "$out/back.sqlite" >history-back.out || fail "history of the copy"
    cmp -s history-back.out history-text.sqlite.out || fail "history of the copied store differs"
    ok "store copy SQLite -> PostgreSQL -> SQLite: every run and field equal (added_at kept), history equal, a second copy adds nothing"

    # Hostile text in every field (terminal escapes, C1 controls, NUL: hostile_text.py) and a
    # label that is not UTF-8: kept whole on both; history and the list the same.
    python3 "$here/../../harness/tests/hostile_text.py" make "$data/ze-1.3.29735.json" hostile.json ||
      fail "cannot make hostile.json"
    latin=$'caf\xe9.json'
    sed 's/"2026-11-01T10:00:00Z"/"2026-11-02T10:00:00Z"/' hostile.json >"$latin"
    cli_lite="$lite" cli_pg="$pg"
    lite="$out/hostile.sqlite"
    pg="$(database "$url" store_hostile)"
    same hostile-add 0 "$ipcheck" store add hostile.json "$latin"
    same hostile-history 0 "$ipcheck" report history
    "$ipcheck" store ls --db "$lite" | tail -n +2 >ls-hostile.sqlite.out
    "$ipcheck" store ls --db "$pg" | tail -n +2 >ls-hostile.pg.out
    cmp -s ls-hostile.sqlite.out ls-hostile.pg.out || fail "store ls differs: $(diff ls-hostile.sqlite.out ls-hostile.pg.out)"
    ok "hostile text and a Latin-1 label: store ls the same from SQLite and PostgreSQL"
    lite="$cli_lite" pg="$cli_pg"

    # Refusals and redaction.
    expect() { # RC TEXT CMD...
      local want="$1" text="$2" rc=0
      shift 2
      "$@" >expect.out 2>&1 || rc=$?
      [ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want: $(cat expect.out)"
      grep -qF -- "$text" expect.out || fail "$*: the output lacks '$text': $(cat expect.out)"
      ! grep -q hunter2 expect.out || fail "$*: shows the password: $(cat expect.out)"
      ok "$* -> $want, '$text'"
    }
    secret="$(echo "$pg" | sed 's|^postgresql://|postgresql://ipcheck:hunter2@|')"
    expect 0 "postgresql://ipcheck:***@/store_cli?host=" "$ipcheck" store ls --db "$secret"
    expect 0 '"db": "postgresql://ipcheck:***@/store_cli' "$ipcheck" store ls --db "$secret" --format json
    empty="$(database "$url" store_empty)"
    expect 2 "no store there; create one by adding a run" "$ipcheck" store ls --db "$empty"
    psql_ "$empty" -c "CREATE TABLE other (x integer)"
    expect 2 "not an ipcheck results store (schema 'public' holds tables of something else)" "$ipcheck" store add "$data/ze-1.3.29735.json" --db "$empty"
    expect 2 "no store there" "$ipcheck" store copy --from "$(database "$url" store_none)" --to "$out/none.sqlite"
    [ ! -e "$out/none.sqlite" ] || fail "a refused copy made its target"
    expect 2 "cannot connect to the PostgreSQL store" "$ipcheck" store ls --db "postgresql://ipcheck:hunter2@/x?host=$out/no-server"
    # A role that may not create tables in the schema (PostgreSQL 15's public): told what to grant.
    psql_ "$url" -c "DROP ROLE IF EXISTS store_reader" -c "CREATE ROLE store_reader LOGIN" >/dev/null
    nopriv="$(database "$url" store_nopriv)"
    expect 2 "permission denied for schema public (SQLSTATE 42501); the role needs the privileges" \
      "$ipcheck" store add "$data/ze-1.3.29735.json" --db "${nopriv/user=ipcheck/user=store_reader}"
    # A lock held past --busy-timeout (lock_timeout): "the store is busy", exit 2, nothing added.
    # (psql itself in the background, not the psql_ function: $! is then psql, which the kill ends.)
    "$(cat "$state/bin")/psql" -X -q "$pg" -c "BEGIN" -c "LOCK TABLE runs IN EXCLUSIVE MODE" -c "SELECT pg_sleep(30)" \
      -c "COMMIT" >/dev/null 2>&1 &
    locker=$!
    for _ in $(seq 100); do
      [ "$(psql_ "$pg" -c "SELECT count(*) FROM pg_locks WHERE relation = 'runs'::regclass AND mode = 'ExclusiveLock' AND granted")" = 1 ] && break
      sleep 0.1
    done
    make_runs 20 20
    expect 2 "the store is busy: another session held a lock for longer than the busy timeout" \
      "$ipcheck" store add run20.json --db "$pg" --busy-timeout 0.5
    kill "$locker" 2>/dev/null
    wait "$locker" 2>/dev/null
    [ "$("$ipcheck" store ls --db "$pg" --format json | grep -c '"digest"')" -eq 3 ] || fail "a busy add added a run"
    PGHOST="$(sed 's|.*host=\([^&]*\).*|\1|' <<<"$url")" PGUSER=ipcheck PGDATABASE=store_cli \
      expect 0 "postgresql: (the PG* environment variables): 3 runs" "$ipcheck" store ls --db postgresql:
    ;;
  *)
    echo "store_pg.sh: unknown test '$test'" >&2
    exit 2
    ;;
esac
