#!/bin/sh
# The build step of CTest's parser-fuzz:export_c (issue 41: "the exported source must compile,
# checked in CI on a sample"). After the fuzz run, the committed corpus and then the run's new
# inputs are run once more through export_c_fuzzer with IPCHECK_EXPORT_C_KEEP, which keeps up
# to MAX distinct programs that passed the fuzzer's oracles; each is built with the command
# its own comment prints (" * Build: cc -std=c11 ..."), verbatim, as repro.c in a folder of its
# own. Fails when a program does not build, holds no Build line, or when no program was kept.
#
#   compile_export_c_sample.sh FUZZER SCRATCH CORPUS [MAX]
set -u
fuzzer="$1" scratch="$2" corpus="$3" max="${4:-20}"
sample="$scratch/sample"
rm -rf "$sample"
mkdir -p "$sample/programs" "$sample/build"
IPCHECK_EXPORT_C_KEEP="$sample/programs" IPCHECK_EXPORT_C_KEEP_MAX="$max" \
  "$fuzzer" -runs=0 -close_fd_mask=3 "$corpus" "$scratch/new" >"$sample/keep.log" 2>&1 || {
  echo "FAIL: export_c_fuzzer over the corpus (to keep the sample) exited $?:"
  tail -n 20 "$sample/keep.log"
  exit 1
}
total=0 failed=0
for program in "$sample/programs"/*.c; do
  [ -e "$program" ] || continue
  total=$((total + 1))
  name="$(basename "$program" .c)"
  dir="$sample/build/$name"
  mkdir -p "$dir"
  cp "$program" "$dir/repro.c"
  command="$(sed -n 's/^ \* Build: //p' "$program" | head -n 1)"
  case "$command" in
    "cc -std=c11 -Wall -Wextra -Werror "*) ;;
    *) echo "FAIL: $name.c prints no 'Build: cc -std=c11 -Wall -Wextra -Werror ...' line (got '$command')"
       failed=$((failed + 1)); continue ;;
  esac
  if (cd "$dir" && sh -c "$command") >"$dir/build.log" 2>&1; then
    echo "ok  $name.c: $command"
  else
    echo "FAIL: $name.c does not build with '$command':"
    head -n 20 "$dir/build.log"
    failed=$((failed + 1))
  fi
done
if [ "$total" -eq 0 ]; then
  echo "FAIL: no exported program was kept from $corpus and $scratch/new: nothing was built"
  exit 1
fi
echo "parser-fuzz export_c: $((total - failed)) of $total sampled programs built with their printed command"
[ "$failed" -eq 0 ]
