// An audit that watches role processes from outside (method "bpf": harness/trace). The
// runner loads one per run and calls it at a few points of each role's life; the role's
// own audit (method "proc", audit.hpp) needs none of this.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace ipcheck {

// How a role ended, as the runner saw it.
struct RoleEnd {
  std::string how;             // "exit 0", "signal SIGSEGV"
  bool killed = false;         // by the runner (on request, injection, timeout, skip): not a crash
  bool crashed = false;        // died by a signal nobody asked for
};

class Auditor {
 public:
  virtual ~Auditor() = default;
  virtual const char* method() const noexcept = 0;

  // A role process was started (fork + exec), before it can run any verb.
  virtual void role_spawned(pid_t pid, const std::string& case_id, const std::string& role) = 0;
  // The role said hello; `mark` is the address of its ipcheck_verb_mark ("0x55...").
  virtual void role_hello(pid_t pid, const std::string& mark) = 0;
  // The role and everything it forked are gone. Takes what the role reported about itself
  // (its audit message, possibly null) and returns the role's audit document; forgets it.
  virtual nlohmann::json role_ended(pid_t pid, const nlohmann::json& reported, const RoleEnd& end) = 0;
  // Forgets a role whose end will not be reported (the case run was abandoned).
  virtual void role_forget(pid_t pid) = 0;
};

struct AuditorLoad {
  std::unique_ptr<Auditor> auditor;  // null when it could not load
  std::string why_not;               // one line: what failed, the value, the fix
};

// Opens, loads and attaches the BPF tracer (each a separate failure point). Honours
// IPCHECK_BPF_FORCE_FAIL=open|load|attach (tests of the fallback) and IPCHECK_BPF_DEBUG=1
// (libbpf's messages on stderr).
AuditorLoad load_bpf_auditor();

}  // namespace ipcheck
