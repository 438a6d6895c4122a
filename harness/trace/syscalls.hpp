// The syscalls the BPF tracer classifies (harness/trace/ipcaudit.cpp sets them into the BPF
// object's constants): numbers from this build's headers, so the BPF object has none.
#pragma once

#include <string>
#include <vector>

#include "ipcaudit.h"

namespace ipcheck::trace {

struct SyscallInfo {
  long nr;
  const char* name;
  ipcaudit_class cls;
  bool touches_fds;  // may add or remove descriptors
};

// Every syscall the tracer tells apart; the others are IPCAUDIT_SYS_OTHER and may touch
// descriptors.
const std::vector<SyscallInfo>& syscall_table();
// "memfd_create", or "syscall 123" for one the table lacks.
std::string syscall_name(unsigned nr);

}  // namespace ipcheck::trace
