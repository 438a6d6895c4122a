// What the kernel side recorded for a role, turned into its audit document
// (ipcaudit_document.hpp): counters named, files rendered, leftovers sorted into leaks and
// what the role merely held, each with the verb call that made it and the verb that would
// have released it.
#include "ipcaudit_document.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "syscalls.hpp"

namespace ipcheck::trace {

using nlohmann::json;

namespace {

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

}  // namespace

json role_audit_document(pid_t pid, const json& reported, const RoleEnd& end, const CollectedRole& c,
                         const std::string& problem) {
  json doc = {{"method", "bpf"}, {"pid", pid}};
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
  if (!problem.empty()) doc["note"] = problem;
  return doc;
}

}  // namespace ipcheck::trace
