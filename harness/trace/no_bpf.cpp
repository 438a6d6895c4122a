// The OS-level audit when this build could not make the BPF tracer (no clang, bpftool,
// libbpf or kernel BTF at build time): `--audit bpf` falls back to proc and says why.
#include "ipcheck/auditor.hpp"

#ifndef IPCHECK_BPF_MISSING
#define IPCHECK_BPF_MISSING "unknown reason"
#endif

namespace ipcheck {

AuditorLoad load_bpf_auditor() {
  return {nullptr, "this ipcheck was built without the BPF tracer (" IPCHECK_BPF_MISSING
                   "); install clang, bpftool and libbpf-dev and rebuild, or use --audit proc"};
}

}  // namespace ipcheck
