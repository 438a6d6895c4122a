#!/usr/bin/env bash
# hostile:export-c-text (issue 41): findings whose every text field is hostile become C
# programs with `ipcheck fuzz --export-c`; each program must build with the command it prints
# (cc -std=c11 -Wall -Wextra -Werror, trigraphs on as ISO C has them) and with a plain `cc`
# (GNU C), and do nothing but reproduce: no code of the finding's text runs (each payload
# tries to create a marker file from a constructor and to define a symbol), and what the
# program prints holds no terminal escape.
#
# The payloads: a comment closed by a backslash-newline between '*' and '/' (line splicing
# happens before comments), the same through the '??/' trigraph, a plain '*/', a '/*', NUL,
# newlines, quotes and backslashes, terminal escapes (ESC, C1 CSI), printf directives, a very
# long text. The fields: the finding's id (in a finding file, and in the description beside a
# reproducer), its detail, the driver, the adapter options, a change's source, the finding
# file's own name (the program says where it was read), and a results file's finding id.
#   check_export_c_hostile.sh IPCHECK OUT CC
set -uo pipefail
ipcheck="$1" out="$2" cc="$3"
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
marker="$out/MARKER"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The findings, written by Python (JSON escapes carry NUL and control characters).
python3 - "$marker" <<'EOF' || exit 1
import json, os, sys
marker = sys.argv[1]
code = ('#include <stdlib.h>\n__attribute__((constructor)) static void hijack_payload(void) '
        '{ if (system("touch ' + marker + '")) {} }\nint hijack_symbol = 1;\n')
payloads = {
    "splice": "x *\\\n/\n" + code + "/*",
    "trigraph": "x *??/\n/\n" + code + "/*",
    "close": "x */\n" + code + "/*",
    "open": "x /* y",
    "nul": "a\u0000b */ c",
    "quotes": "\"\\\" ' \\",
    "escapes": "\u001b]0;owned\u0007\u001b[2J\u009b31m",
    "format": "%s%n%x%p",
    "trigraphs": "??= ??( ??/ ??) ??' ??< ??! ??> ??-",
    "long": "L" * 100000 + " */ " + code,
}

def cuda_repro(text, target="memory"):
    return {"schema": "ipcheck.fuzz-repro/1", "adapter": "cuda",
            "handle_layout": "cuda-ipc-mem/learned" if target == "memory" else "opaque/64", "target": target,
            "setup": "ipcheck.fuzz-setup/1", "transport": "pidfd", "adapter_options": {"x": text},
            "driver": text, "expect": "confused_deputy",
            "input": {"base": "producer.export[2]" if target == "memory" else "producer.export[0]",
                      "changes": [{"field": "offset" if target == "memory" else "bytes@8", "value": "0x17a00", "from": text}],
                      "checksum": "as_changed", "length": 64, "tail": "", "descriptor": ""}, "bytes": ""}

def ur_repro(text, layout, length):
    return {"schema": "ipcheck.fuzz-repro/1", "adapter": "ur", "handle_layout": layout,
            "setup": "ipcheck.fuzz-setup/1", "transport": "pidfd", "adapter_options": {"l0": text, text: "v2"},
            "driver": text, "expect": "unreadable_mapping",
            "input": {"base": "producer.export[0]", "changes": [{"field": "umf.offset", "value": "0x40000000", "from": text}],
                      "checksum": "as_changed", "length": length, "tail": "", "descriptor": ""}, "bytes": ""}

def finding_file(text):
    return {"schema": "ipcheck.fuzz-finding/1", "id": text, "outcome": "confused_deputy", "detail": text,
            "adapter": "cuda", "target": "memory", "driver": {"version": text}, "handle_layout": "cuda-ipc-mem/learned",
            "input": cuda_repro(text)["input"]}

def results(text):
    return {"schema": "ipcheck.results/1", "run": {"options": {"l0": text}},
            "fuzz": {"adapter": "cuda", "driver": {"version": text}, "handle_layout": {"name": "cuda-ipc-mem/learned"},
                     "target": "memory handles (cuda)",
                     "findings": [{"id": text.replace("\u0000", ""), "outcome": "confused_deputy", "detail": text,
                                   "mutation": "offset := 0x17a00; from producer.export[2]"}]}}

def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)

for name, text in payloads.items():
    os.makedirs(name, exist_ok=True)
    write(f"{name}/cuda.repro", cuda_repro(text))
    write(f"{name}/cuda.json", {"id": text, "detail": text, "outcome": "confused_deputy"})
    write(f"{name}/event.repro", cuda_repro(text, "event"))
    write(f"{name}/event.json", {"id": text, "detail": text, "outcome": "confused_deputy"})
    write(f"{name}/urv1.repro", ur_repro(text, "ur-umf-l0-v1/1", 108))
    write(f"{name}/urv1.json", {"id": text, "detail": text})
    write(f"{name}/urv2.repro", ur_repro(text, "ur-umf-l0-v2/1", 120))
    write(f"{name}/urcuda.repro", ur_repro(text, "ur-umf-cuda/1", 104))
    write(f"{name}/finding.json", finding_file(text))
    write(f"{name}/results.json", results(text))
    with open(f"{name}/id", "w") as f:
        f.write(text.replace("\u0000", ""))  # an argument cannot hold NUL
# A finding file whose own name is hostile (the program says where the finding was read).
hostile_dir = "name/x */\n#error hijacked\n/* ??/"
os.makedirs(hostile_dir, exist_ok=True)
write(os.path.join(hostile_dir, "f.repro"), cuda_repro("plain"))
EOF

programs=0
check_program() { # check_program NAME SOURCE KIND(cuda|ur)
  local name="$1" src="$2" kind="$3" rc out
  programs=$((programs + 1))
  for build in "-std=c11 -Wall -Wextra -Werror" "-std=gnu11 -trigraphs -Wall -Wextra -Werror" ""; do
    # shellcheck disable=SC2086
    if ! out="$("$cc" $build -o "$name.bin" "$src" -ldl 2>&1)"; then
      fail "$name: the exported program does not build with 'cc $build': $(head -c 600 <<<"$out")"
      continue
    fi
    if nm "$name.bin" | grep -q hijack; then fail "$name: 'cc $build' built the finding's text as code (nm shows hijack)"; fi
    rm -f "$marker"
    if [ "$kind" = cuda ]; then
      out="$(REPRO_LIBCUDA="$out_dir/no-such-libcuda.so.1" "./$name.bin" 2>&1)"
    else
      out="$("./$name.bin" "$out_dir/no-such-libur_loader.so.0" 2>&1)"
    fi
    rc=$?
    [ -e "$marker" ] && fail "$name: running the program ran the finding's text (the marker file was made)"
    [ "$rc" -eq 2 ] || fail "$name: without a runtime the program should exit 2 (set-up error); exit $rc: $(head -c 300 <<<"$out")"
    if LC_ALL=C grep -q $'[\x1b\x07]' <<<"$out" || LC_ALL=C grep -q $'\xc2\x9b' <<<"$out"; then
      fail "$name: the program printed a terminal escape"
    fi
  done
}
out_dir="$out"

export_one() { # export_one NAME ARGS...: exports, checks the printed line, builds and runs
  local name="$1" line rc
  shift
  line="$("$ipcheck" fuzz --export-c "$@" -o "$out/$name.c" 2>&1)"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$name: export failed (exit $rc): $(head -c 400 <<<"$line")"
    return
  fi
  if LC_ALL=C grep -q $'[\x1b\x07]' <<<"$line" || LC_ALL=C grep -q $'\xc2\x9b' <<<"$line"; then
    fail "$name: ipcheck's 'wrote' line holds a terminal escape"
  fi
  local kind=cuda
  [[ "$name" == *ur* ]] && kind=ur
  check_program "$name" "$out/$name.c" "$kind"
}

for dir in splice trigraph close open nul quotes escapes format trigraphs long; do
  export_one "$dir-cuda" "$dir/cuda.repro"
  export_one "$dir-event" "$dir/event.repro"
  export_one "$dir-urv1" "$dir/urv1.repro"
  export_one "$dir-urv2" "$dir/urv2.repro"
  export_one "$dir-urcuda" "$dir/urcuda.repro"
  export_one "$dir-finding" "$dir/finding.json"
  id="$(cat "$dir/id"; printf x)"  # the id as written, its trailing newlines too
  export_one "$dir-results" "${id%x}" --results "$dir/results.json"
done
export_one name-cuda "name/x */
#error hijacked
/* ??/"/f.repro

echo "hostile:export-c-text: $programs programs exported from hostile findings, each built three ways and run; $failures failures"
[ "$failures" -eq 0 ]
