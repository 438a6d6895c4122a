// Seeded defects of the bench gate's own deciding code (issue 45's twins of the catalog's
// seeded defects): switched on by IPCHECK_BENCH_DEFECT=<name>, and only in ipcheck-defects
// (linked with the defect-seeded ipcref, ipcref::defects::compiled_in()); ipcheck compiles
// the check in but can never switch one on. Each names the test that must catch it
// (bench/tests/CMakeLists.txt, label defects):
//   gate_passes_unmeasured  an unmeasured gated figure passes   (bench:gate.fails_unmeasured)
//   gate_ignores_syscalls   a system-call count beyond its tolerance passes
//                                                              (bench:gate.catches_slow_open)
#pragma once

#include <cstdlib>
#include <cstring>

#include "ipcref/defects.hpp"

namespace ipcheck::bench {

inline bool gate_defect(const char* name) {
  if (!ipcref::defects::compiled_in()) return false;
  const char* on = std::getenv("IPCHECK_BENCH_DEFECT");
  return on && std::strcmp(on, name) == 0;
}

}  // namespace ipcheck::bench
