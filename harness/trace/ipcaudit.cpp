// The OS-level audit, user side: loads ipcaudit.bpf.c (open, load, attach: three failure
// points, each saying what failed and what to do), registers role processes, and turns
// what the kernel side recorded into each role's audit document: a call profile per verb
// and the descriptors and shared mappings the body created and never released, each with
// the verb call that made it.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "ipcaudit.h"
#include "ipcaudit.skel.h"
#include "syscalls.hpp"
#include "ipcheck/auditor.hpp"

namespace ipcheck {

using nlohmann::json;
using trace::syscall_name;
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

const char* counter_name(unsigned c) {
  switch (c) {
    case IPCAUDIT_C_SYSCALLS: return "syscalls";
    case IPCAUDIT_C_FAILED: return "failed";
    case IPCAUDIT_C_CALLS_TRACED: return "calls";
    case IPCAUDIT_C_MEMFD_CREATE: return "memfd_create";
    case IPCAUDIT_C_PIDFD_OPEN: return "pidfd_open";
    case IPCAUDIT_C_PIDFD_GETFD: return "pidfd_getfd";
    case IPCAUDIT_C_DUP: return "dup";
    case IPCAUDIT_C_OPEN: return "open";
    case IPCAUDIT_C_CLOSE: return "close";
    case IPCAUDIT_C_MMAP_SHARED: return "mmap_shared";
    case IPCAUDIT_C_MMAP_PRIVATE: return "mmap_private";
    case IPCAUDIT_C_MUNMAP: return "munmap";
    case IPCAUDIT_C_MREMAP: return "mremap";
    case IPCAUDIT_C_IOCTL: return "ioctl";
    case IPCAUDIT_C_IOCTL_TARGET: return "ioctl:";
    case IPCAUDIT_C_SENDMSG: return "sendmsg";
    case IPCAUDIT_C_FDS_SENT: return "fds_sent";
    case IPCAUDIT_C_RECVMSG: return "recvmsg";
    case IPCAUDIT_C_FDS_CREATED: return "fds_created";
    case IPCAUDIT_C_FDS_CLOSED: return "fds_closed";
    default: return "unknown";
  }
}

// The verb that releases what `verb` made, for the evidence line ("...; 3 mem_close calls").
const char* releasing_verb(const std::string& verb) {
  static const std::map<std::string, const char*> pairs = {
      {"alloc", "free"},           {"mem_get", "mem_put"},          {"mem_open", "mem_close"},
      {"phys_create", "phys_release"}, {"phys_get", "phys_put"},    {"phys_open", "phys_close"},
      {"vm_reserve", "vm_free"},   {"vm_map", "vm_unmap"},          {"event_create", "event_release"},
      {"event_get", "event_put"},  {"event_open", "event_release"},
  };
  auto it = pairs.find(verb);
  return it == pairs.end() ? nullptr : it->second;
}

std::string fixed_string(const char* s, std::size_t n) { return std::string(s, ::strnlen(s, n)); }

// "/dev/dri/renderD128", "/memfd:ipcref-memory", "socket:[4242]", "anon_inode:[eventfd]".
std::string render_file(const ipcaudit_file& f, bool with_inode) {
  if (f.mode == 0 && f.parts == 0) return "unknown";  // the descriptor was gone when the tracer looked
  const unsigned type = f.mode & S_IFMT;
  const std::string ino = with_inode ? ":[" + std::to_string(f.ino) + "]" : "";
  if (type == S_IFSOCK) return "socket" + ino;
  std::vector<std::string> parts;
  for (unsigned i = 0; i < f.parts && i < IPCAUDIT_PATH_PARTS; ++i) {
    std::string p = fixed_string(f.name[i], IPCAUDIT_NAME_LEN);
    if (p != "/" && !p.empty()) parts.push_back(std::move(p));
  }
  if (parts.empty()) return (type == S_IFIFO ? "pipe" : "anon_inode") + ino;
  if (parts.size() == 1 && parts[0].front() == '[') return "anon_inode:" + parts[0];
  std::string path;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) path += "/" + *it;
  return path;
}

std::string hex(unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", v);
  return buf;
}

std::string verb_call(const char* verb, unsigned long long ordinal) {
  const std::string v = fixed_string(verb, IPCAUDIT_VERB_LEN);
  if (v.empty()) return "";
  return ordinal ? v + " #" + std::to_string(ordinal) : v;
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

// What the kernel side held for one role when it ended.
struct CollectedRole {
  ipcaudit_role role{};
  bool have_role = false;
  std::vector<std::pair<ipcaudit_count_key, unsigned long long>> counts;
  std::vector<std::pair<ipcaudit_fd_key, ipcaudit_fd>> fds;
  std::vector<std::pair<ipcaudit_map_key, ipcaudit_map>> maps;
};

// What the role called, verb by verb: the role's own count of verb calls when it could send
// one, the tracer's otherwise; the tracer's counters by verb, and those outside any verb.
struct VerbProfile {
  std::map<std::string, unsigned long long> calls;
  bool reported_calls = false;
  json profile = json::object();
  std::map<std::string, unsigned long long> outside;
};

VerbProfile verb_profile(const CollectedRole& c, const json& reported) {
  VerbProfile p;
  p.reported_calls = reported.is_object() && reported.contains("verbs") && reported["verbs"].is_object();
  if (p.reported_calls)
    for (const auto& [verb, n] : reported["verbs"].items()) p.calls[verb] = n.get<unsigned long long>();

  std::map<std::string, std::map<std::string, unsigned long long>> by_verb;
  for (const auto& [k, v] : c.counts) {
    const std::string verb = fixed_string(k.verb, IPCAUDIT_VERB_LEN);
    std::string name = counter_name(k.counter);
    if (k.counter == IPCAUDIT_C_IOCTL_TARGET) name += render_file(k.target, false);
    if (k.counter == IPCAUDIT_C_CALLS_TRACED) {
      if (!p.reported_calls && !verb.empty()) p.calls[verb] = std::max(p.calls[verb], v);
      continue;
    }
    (verb.empty() ? p.outside : by_verb[verb])[name] += v;
  }
  for (const auto& [verb, n] : p.calls) by_verb[verb]["calls"] = n;
  for (const auto& [verb, counters] : by_verb) p.profile[verb] = counters;
  return p;
}

// How far the role's body got, as the kernel side saw it.
std::string body_state(const CollectedRole& c) {
  if (!c.have_role || !c.role.ended) return "unknown";
  if (c.role.end_phase == IPCAUDIT_PHASE_AFTER_BODY) return "finished";
  if (c.role.end_phase == IPCAUDIT_PHASE_BODY) return "ended inside the body";
  return "ended before the body";
}

// How the descriptors and mappings a role had at its end are described and sorted: leaks (the
// role's own, when its body finished or it crashed in it) or held.
struct LeftoverWords {
  const std::map<std::string, unsigned long long>& calls;
  pid_t pid;
  bool judged;
  bool in_body_death;
  std::string died_how;

  // The verb that would have released it, and how many calls of it the role made.
  std::string releases(const std::string& verb) const {
    const char* r = releasing_verb(verb);
    if (!r) return std::string();
    auto n = calls.find(r);
    return std::string("; the role made ") + std::to_string(n == calls.end() ? 0 : n->second) + " " + r + " call" +
           (n != calls.end() && n->second == 1 ? "" : "s");
  }
  std::string where_left(unsigned state, const char* held) const {
    if (state == IPCAUDIT_RELEASED_AFTER_BODY) return std::string("released only after the body ended");
    if (in_body_death) return std::string("still ") + held + " when the role " + died_how + " inside its body";
    return std::string("never released by the end of the body");
  }
  void add(json entry, unsigned tgid, json& leaks, json& held) const {
    if (tgid != static_cast<unsigned>(pid)) entry["pid"] = tgid;
    (judged && tgid == static_cast<unsigned>(pid) ? leaks : held).push_back(std::move(entry));
  }
};

void add_fd_leftovers(std::vector<std::pair<ipcaudit_fd_key, ipcaudit_fd>> fds, const LeftoverWords& w, json& leaks,
                      json& held) {
  std::sort(fds.begin(), fds.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.tgid, a.first.fd) < std::tie(b.first.tgid, b.first.fd);
  });
  for (const auto& [k, f] : fds) {
    const std::string item = "fd " + std::to_string(k.fd) + " -> " + render_file(f.what, true);
    const std::string verb = verb_call(f.verb, f.ordinal);
    const std::string made = "created by " + syscall_name(f.nr) + (verb.empty() ? " outside any verb" : " in " + verb);
    std::string detail = made + " (inode " + std::to_string(f.what.ino) + "), " + w.where_left(f.state, "open") +
                         w.releases(fixed_string(f.verb, IPCAUDIT_VERB_LEN));
    w.add({{"kind", "fd"}, {"item", item}, {"verb", verb}, {"detail", detail}}, k.tgid, leaks, held);
  }
}

void add_mapping_leftovers(std::vector<std::pair<ipcaudit_map_key, ipcaudit_map>> maps, const LeftoverWords& w,
                           json& leaks, json& held) {
  std::sort(maps.begin(), maps.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.tgid, a.first.start) < std::tie(b.first.tgid, b.first.start);
  });
  for (const auto& [k, m] : maps) {
    std::string perms;
    perms += (m.prot & 1) ? 'r' : '-';
    perms += (m.prot & 2) ? 'w' : '-';
    perms += (m.prot & 4) ? 'x' : '-';
    perms += ((m.flags & 3) == 1 || (m.flags & 3) == 3) ? 's' : 'p';
    const std::string what = m.what.parts || m.what.mode ? render_file(m.what, false) : std::string("anonymous");
    const std::string item = hex(k.start) + "-" + hex(k.start + m.length) + " " + perms + " " + what;
    const std::string verb = verb_call(m.verb, m.ordinal);
    std::string detail = "mapped (" + std::to_string(m.length) + " bytes) " +
                         (verb.empty() ? "outside any verb" : "in " + verb) + ", " + w.where_left(m.state, "mapped") +
                         w.releases(fixed_string(m.verb, IPCAUDIT_VERB_LEN));
    w.add({{"kind", "mapping"}, {"item", item}, {"verb", verb}, {"detail", detail}}, k.tgid, leaks, held);
  }
}

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
  const VerbProfile p = verb_profile(c, reported);
  const std::string body = body_state(c);
  const bool in_body_death = body == "ended inside the body";
  // What the body left behind is a finding when the body finished, or when the role crashed
  // in it; a role the runner killed (or that exited) mid-body just held what it held.
  const LeftoverWords words{p.calls, pid, body == "finished" || (in_body_death && end.crashed), in_body_death,
                            end.how.empty() ? "ended" : "ended (" + end.how + ")"};
  json leaks = json::array(), held = json::array();
  add_fd_leftovers(c.fds, words, leaks, held);
  add_mapping_leftovers(c.maps, words, leaks, held);

  doc["body"] = body;
  doc["calls_from"] = p.reported_calls ? "role" : "tracer";
  if (p.reported_calls) doc["verbs"] = reported["verbs"];
  doc["profile"] = p.profile;
  doc["outside_verbs"] = p.outside;
  doc["leaks"] = leaks;
  if (!held.empty()) doc["held_at_end"] = held;
  doc["tracer"] = {{"processes", c.role.processes},
                   {"dropped", c.role.dropped},
                   {"fd_overflow", c.role.fd_overflow != 0},
                   {"mark_faults", c.role.mark_faults}};
  if (!t.problem.empty()) doc["note"] = t.problem;
  return doc;
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
