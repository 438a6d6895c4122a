// The OS-level audit, user side: the tracer. Loads ipcaudit.bpf.c (open, load, attach: three
// failure points, each saying what failed and what to do), registers role processes in its
// maps, and when a role ends takes what the kernel side recorded for it out of the maps;
// ipcaudit_document.cpp turns that into the role's audit document.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "ipcaudit.h"
#include "ipcaudit_document.hpp"
#include "ipcaudit.skel.h"
#include "syscalls.hpp"
#include "ipcheck/auditor.hpp"

namespace ipcheck {

using nlohmann::json;
using trace::CollectedRole;
using trace::syscall_table;

namespace {

// ---- libbpf's messages: kept for the failure reason, printed only on request

std::mutex g_log_lock;
std::string* g_log = nullptr;  // the load in progress collects here
bool g_debug = false;

int on_libbpf_message(enum libbpf_print_level level, const char* format, va_list args) {
  char line[1024];
  std::vsnprintf(line, sizeof line, format, args);
  if (g_debug) std::fputs(line, stderr);
  if (g_log && level != LIBBPF_DEBUG) *g_log += line;
  return 0;
}

// The last line libbpf printed before a failure, which usually names the cause.
std::string last_message(const std::string& log) {
  std::string s = log;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

std::string error_text(int err) {
  err = err < 0 ? -err : err;
  const char* name = ::strerrorname_np(err);
  return std::string(::strerror(err)) + " (" + (name ? name : std::to_string(err)) + ")";
}

// Every key of a hash map (a snapshot: entries may come and go meanwhile).
template <class Key>
std::vector<Key> map_keys(int map_fd, std::size_t max_entries) {
  std::vector<Key> keys;
  std::set<std::vector<unsigned char>> seen;
  Key key{}, next{};
  const Key* prev = nullptr;
  for (std::size_t guard = 0; guard < 4 * max_entries; ++guard) {
    if (::bpf_map_get_next_key(map_fd, prev, &next) != 0) break;
    const auto* b = reinterpret_cast<const unsigned char*>(&next);
    if (seen.insert(std::vector<unsigned char>(b, b + sizeof next)).second) keys.push_back(next);
    key = next;
    prev = &key;
  }
  return keys;
}

struct SkeletonDeleter {
  void operator()(ipcaudit_bpf* s) const noexcept { ipcaudit_bpf__destroy(s); }
};
using Skeleton = std::unique_ptr<ipcaudit_bpf, SkeletonDeleter>;

class BpfAuditor final : public Auditor {
 public:
  explicit BpfAuditor(Skeleton skel) : skel_(std::move(skel)) {}

  const char* method() const noexcept override { return "bpf"; }

  void role_spawned(pid_t pid, const std::string& case_id, const std::string& role) override {
    std::lock_guard lock(lock_);
    const unsigned id = next_id_++;
    ipcaudit_role r{};
    r.processes = 1;
    ipcaudit_proc p{};
    p.role = id;
    p.is_role = 1;
    const unsigned tgid = static_cast<unsigned>(pid);
    Tracked t{id, case_id, role, ""};
    if (::bpf_map_update_elem(map_fd(skel_->maps.roles), &id, &r, BPF_ANY) != 0 ||
        ::bpf_map_update_elem(map_fd(skel_->maps.procs), &tgid, &p, BPF_ANY) != 0)
      t.problem = "the tracer could not follow " + role + " of " + case_id + " (pid " + std::to_string(pid) +
                  "): " + error_text(errno) + "; its profile and leaks are missing";
    tracked_[pid] = std::move(t);
  }

  void role_hello(pid_t pid, const std::string& mark) override {
    std::lock_guard lock(lock_);
    auto it = tracked_.find(pid);
    if (it == tracked_.end()) return;
    char* end = nullptr;
    const unsigned long long addr = std::strtoull(mark.c_str(), &end, 0);
    if (mark.empty() || !end || *end || addr == 0) {
      it->second.problem = it->second.role + " of " + it->second.case_id + " sent no usable verb mark address ('" +
                           mark + "'); descriptors cannot be tied to verbs";
      return;
    }
    const unsigned tgid = static_cast<unsigned>(pid);
    if (::bpf_map_update_elem(map_fd(skel_->maps.marks), &tgid, &addr, BPF_ANY) != 0)
      it->second.problem = "the tracer could not store the verb mark of " + it->second.role + " of " +
                           it->second.case_id + ": " + error_text(errno) + "; descriptors cannot be tied to verbs";
  }

  void role_forget(pid_t pid) override {
    std::lock_guard lock(lock_);
    auto it = tracked_.find(pid);
    if (it == tracked_.end()) return;
    collect(it->second.id);
    tracked_.erase(it);
  }

  json role_ended(pid_t pid, const json& reported, const RoleEnd& end) override;

 private:
  struct Tracked {
    unsigned id;
    std::string case_id, role;
    std::string problem;
  };
  static int map_fd(bpf_map* m) { return ::bpf_map__fd(m); }

  // Takes (and removes) everything the kernel side holds for role `id`.
  CollectedRole collect(unsigned id) {
    CollectedRole c;
    // Descendants that escaped the role's group are no longer followed.
    const int procs = map_fd(skel_->maps.procs);
    for (const auto& tgid : map_keys<unsigned>(procs, IPCAUDIT_MAX_PROCS)) {
      ipcaudit_proc p{};
      if (::bpf_map_lookup_elem(procs, &tgid, &p) == 0 && p.role == id) {
        ::bpf_map_delete_elem(procs, &tgid);
        ::bpf_map_delete_elem(map_fd(skel_->maps.marks), &tgid);
        ::bpf_map_delete_elem(map_fd(skel_->maps.states), &tgid);
      }
    }
    const int roles = map_fd(skel_->maps.roles);
    c.have_role = ::bpf_map_lookup_elem(roles, &id, &c.role) == 0;
    ::bpf_map_delete_elem(roles, &id);
    const int counts = map_fd(skel_->maps.counts);
    for (const auto& k : map_keys<ipcaudit_count_key>(counts, IPCAUDIT_MAX_COUNTS)) {
      if (k.role != id) continue;
      unsigned long long v = 0;
      if (::bpf_map_lookup_elem(counts, &k, &v) == 0) c.counts.emplace_back(k, v);
      ::bpf_map_delete_elem(counts, &k);
    }
    const int fds = map_fd(skel_->maps.fds);
    for (const auto& k : map_keys<ipcaudit_fd_key>(fds, IPCAUDIT_MAX_RECORDS)) {
      if (k.role != id) continue;
      ipcaudit_fd v{};
      if (::bpf_map_lookup_elem(fds, &k, &v) == 0) c.fds.emplace_back(k, v);
      ::bpf_map_delete_elem(fds, &k);
    }
    const int maps = map_fd(skel_->maps.mappings);
    for (const auto& k : map_keys<ipcaudit_map_key>(maps, IPCAUDIT_MAX_RECORDS)) {
      if (k.role != id) continue;
      ipcaudit_map v{};
      if (::bpf_map_lookup_elem(maps, &k, &v) == 0) c.maps.emplace_back(k, v);
      ::bpf_map_delete_elem(maps, &k);
    }
    return c;
  }

  Skeleton skel_;
  std::mutex lock_;
  unsigned next_id_ = 1;
  std::map<pid_t, Tracked> tracked_;
};

json BpfAuditor::role_ended(pid_t pid, const json& reported, const RoleEnd& end) {
  std::lock_guard lock(lock_);
  json doc = {{"method", "bpf"}, {"pid", pid}};
  auto it = tracked_.find(pid);
  if (it == tracked_.end()) {
    doc["note"] = "the tracer was not following this role";
    return doc;
  }
  const Tracked t = it->second;
  tracked_.erase(it);
  const CollectedRole c = collect(t.id);
  return trace::role_audit_document(pid, reported, end, c, t.problem);
}

// pid namespace of this process: 0 for the initial one (pids need no translation).
unsigned own_pid_namespace() {
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) != 0) return 0;
  constexpr unsigned long kInitialPidNamespace = 0xEFFFFFFCul;  // PROC_PID_INIT_INO
  return st.st_ino == kInitialPidNamespace ? 0 : static_cast<unsigned>(st.st_ino);
}

std::string forced_failure() {
  const char* v = std::getenv("IPCHECK_BPF_FORCE_FAIL");
  return v ? v : "";
}

// The BPF object's constants, set between open and load: each syscall's class, which
// syscalls may change the descriptor table, this process's pid namespace, and whether the
// verifier is to refuse the programs (IPCHECK_BPF_FORCE_FAIL=load).
void set_bpf_constants(ipcaudit_bpf* skel, const std::string& forced) {
  for (const auto& s : syscall_table()) {
    if (s.nr < 0 || s.nr >= IPCAUDIT_MAX_SYSCALL) continue;
    skel->rodata->syscall_class[s.nr] = static_cast<unsigned char>(s.cls);
  }
  // Any syscall may add or remove descriptors (an ioctl that exports a dma-buf, a recvmsg
  // with SCM_RIGHTS) except those the table says never do.
  std::memset(skel->rodata->syscall_touches_fds, 1, sizeof skel->rodata->syscall_touches_fds);
  for (const auto& s : syscall_table())
    if (s.nr >= 0 && s.nr < IPCAUDIT_MAX_SYSCALL) skel->rodata->syscall_touches_fds[s.nr] = s.touches_fds ? 1 : 0;
  skel->rodata->pidns_ino = own_pid_namespace();
  // A real refusal by the kernel's verifier, not a pretend one.
  skel->rodata->force_reject = forced == "load" ? 1 : 0;
}

// Attaches the loaded programs one by one; "" when all are attached, else what failed.
std::string attach_bpf_programs(ipcaudit_bpf* skel, const std::string& forced) {
  struct {
    bpf_program* prog;
    bpf_link** link;
  } programs[] = {
      {skel->progs.ipcaudit_sys_enter, &skel->links.ipcaudit_sys_enter},
      {skel->progs.ipcaudit_sys_exit, &skel->links.ipcaudit_sys_exit},
      {skel->progs.ipcaudit_fork, &skel->links.ipcaudit_fork},
      {skel->progs.ipcaudit_exec, &skel->links.ipcaudit_exec},
      {skel->progs.ipcaudit_exit, &skel->links.ipcaudit_exit},
  };
  for (auto& p : programs) {
    if (forced == "attach")
      return std::string("attaching ") + ::bpf_program__name(p.prog) + " failed: forced by IPCHECK_BPF_FORCE_FAIL=attach";
    *p.link = ::bpf_program__attach(p.prog);
    if (!*p.link)
      return std::string("attaching ") + ::bpf_program__name(p.prog) + " (" + ::bpf_program__section_name(p.prog) +
             ") failed: " + error_text(errno) + "; the kernel needs BTF-enabled tracepoints (5.5 or later)";
  }
  return "";
}

}  // namespace

AuditorLoad load_bpf_auditor() {
  AuditorLoad out;
  const std::string forced = forced_failure();
  if (!forced.empty() && forced != "open" && forced != "load" && forced != "attach") {
    out.why_not = "IPCHECK_BPF_FORCE_FAIL is '" + forced + "'; use open, load or attach";
    return out;
  }
  std::lock_guard log_lock(g_log_lock);
  std::string log;
  g_log = &log;
  g_debug = std::getenv("IPCHECK_BPF_DEBUG") != nullptr;
  libbpf_set_print(on_libbpf_message);
  struct Restore {
    ~Restore() { g_log = nullptr; }
  } restore;

  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    out.why_not = "the kernel exposes no BTF (/sys/kernel/btf/vmlinux: " + error_text(errno) +
                  "), which CO-RE needs; use a kernel built with CONFIG_DEBUG_INFO_BTF, or --audit proc";
    return out;
  }

  // 1. open
  if (forced == "open") {
    out.why_not = "opening the BPF object failed: forced by IPCHECK_BPF_FORCE_FAIL=open";
    return out;
  }
  Skeleton skel(ipcaudit_bpf__open());
  if (!skel) {
    out.why_not = "opening the BPF object failed: " + error_text(errno) + " (" + last_message(log) + ")";
    return out;
  }
  set_bpf_constants(skel.get(), forced);

  // 2. load
  if (const int err = ipcaudit_bpf__load(skel.get()); err != 0) {
    if (err == -EPERM)
      out.why_not = "loading the BPF programs was refused: " + error_text(err) +
                    "; the bpf audit needs root (or CAP_BPF and CAP_PERFMON): run as root, or use --audit proc";
    else
      out.why_not = "the kernel refused the BPF programs: " + error_text(err) + " (libbpf: " + last_message(log) +
                    ")" + (forced == "load" ? "; forced by IPCHECK_BPF_FORCE_FAIL=load" : "");
    return out;
  }

  // 3. attach, program by program
  out.why_not = attach_bpf_programs(skel.get(), forced);
  if (!out.why_not.empty()) return out;
  out.auditor = std::make_unique<BpfAuditor>(std::move(skel));
  return out;
}

}  // namespace ipcheck
