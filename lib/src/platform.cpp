// Devices and contexts. The device set is configured once per process:
//   IPCHECK_REF_DEVICES="gpu0=memory,physical_memory,event;gpu1=memory"
//   IPCHECK_REF_CONFIG=/path/file   (one "name = aspects" per line, '#' comments)
// Aspects: memory, physical_memory, event, all, none. Default: ref0 and ref1 with all.
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "ipcref/defects.hpp"
#include "ipcref/ipcref.hpp"
#include "sys.hpp"
#include "text.hpp"

namespace ipcref {

using text::cat;

namespace {

struct device_desc {
  std::string name;
  bool aspects[aspect_count] = {};
};

struct platform_state {
  std::vector<device_desc> devices;
  std::string source;
};

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Parses "name = aspect, aspect"; `where` says where the text came from, for messages.
device_desc parse_device(const std::string& entry, const std::string& where) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos)
    sys::fail(errc::invalid, cat(where, ": device entry '", entry,
                                 "' has no '=': write name=aspects, for example ref0=memory,event"));
  device_desc d;
  d.name = trim(entry.substr(0, eq));
  if (d.name.empty()) sys::fail(errc::invalid, cat(where, ": device entry '", entry, "' has an empty name"));
  std::istringstream aspects(entry.substr(eq + 1));
  std::string a;
  while (std::getline(aspects, a, ',')) {
    a = trim(a);
    if (a.empty() || a == "none") continue;
    if (a == "all") {
      for (bool& v : d.aspects) v = true;
    } else if (a == "memory") {
      d.aspects[0] = true;
    } else if (a == "physical_memory") {
      d.aspects[1] = true;
    } else if (a == "event") {
      d.aspects[2] = true;
    } else {
      sys::fail(errc::invalid, cat(where, ": device '", d.name, "' names unknown aspect '", a,
                                   "'; known aspects: memory, physical_memory, event, all, none"));
    }
  }
  return d;
}

platform_state load_platform() {
  platform_state p;
  if (const char* env = std::getenv("IPCHECK_REF_DEVICES"); env && *env) {
    p.source = cat("IPCHECK_REF_DEVICES=", env);
    std::istringstream in(env);
    std::string entry;
    while (std::getline(in, entry, ';'))
      if (!trim(entry).empty()) p.devices.push_back(parse_device(entry, "IPCHECK_REF_DEVICES"));
  } else if (const char* path = std::getenv("IPCHECK_REF_CONFIG"); path && *path) {
    p.source = path;
    std::ifstream in(path);
    if (!in)
      sys::fail(errc::invalid, cat("IPCHECK_REF_CONFIG: cannot read '", path, "': ", sys::errno_text(errno),
                                   "; point it at a file of 'name = aspects' lines"));
    std::string line;
    errno = 0;
    for (int n = 1; std::getline(in, line); ++n) {
      line = trim(line.substr(0, line.find('#')));
      if (!line.empty()) p.devices.push_back(parse_device(line, cat(path, ":", n)));
    }
    // A read error (a directory opens, then fails to read) is not an empty configuration.
    if (in.bad())
      sys::fail(errc::invalid, cat("IPCHECK_REF_CONFIG: cannot read '", path, "': ",
                                   errno ? sys::errno_text(errno) : std::string("read error"),
                                   "; point it at a file of 'name = aspects' lines"));
  } else {
    p.source = "default";
    for (const char* name : {"ref0", "ref1"}) p.devices.push_back(parse_device(cat(name, "=all"), "default"));
  }
  if (p.devices.empty())
    sys::fail(errc::invalid, cat(p.source, ": no devices configured; name at least one, for example ref0=all"));
  for (std::size_t i = 0; i < p.devices.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (p.devices[i].name == p.devices[j].name)
        sys::fail(errc::invalid, cat(p.source, ": device name '", p.devices[i].name, "' is used twice"));
  return p;
}

const platform_state& platform() {
  // Parsed once; a configuration error is thrown to every caller, not just the first.
  static std::once_flag once;
  static platform_state state;
  static std::string error;
  std::call_once(once, [] {
    try {
      state = load_platform();
    } catch (const exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) sys::fail(errc::invalid, error);
  return state;
}

}  // namespace

struct platform_access {
  static device make(std::uint32_t i) { return device(i); }
};

const char* aspect_name(aspect a) noexcept {
  switch (a) {
    case aspect::ipc_memory: return "ipc_memory";
    case aspect::ipc_physical_memory: return "ipc_physical_memory";
    case aspect::ipc_event: return "ipc_event";
  }
  return "unknown";
}

const std::string& device::name() const {
  const auto& p = platform();
  if (index_ >= p.devices.size()) sys::fail(errc::invalid, cat("device index ", index_, " is not a device"));
  return p.devices[index_].name;
}

bool device::has(aspect a) const {
  const auto& p = platform();
  if (index_ >= p.devices.size()) sys::fail(errc::invalid, cat("device index ", index_, " is not a device"));
  if (a == aspect::ipc_physical_memory && defects::is(defects::id::aspect_query_fails))
    sys::fail(errc::device_lost, "device::has(ipc_physical_memory): the query failed (seeded defect aspect_query_fails)");
  return p.devices[index_].aspects[static_cast<int>(a)];
}

std::vector<device> get_devices() {
  std::vector<device> out;
  const auto n = platform().devices.size();
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(platform_access::make(i));
  return out;
}

std::string device_config_source() { return platform().source; }

namespace detail {
std::size_t platform_device_count() { return platform().devices.size(); }
}  // namespace detail

struct context::state {
  std::uint64_t id;
  std::vector<device> devices;
};

namespace {
std::uint64_t next_context_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}
}  // namespace

context::context() : context(get_devices()) {}

context::context(std::vector<device> devices) {
  if (devices.empty()) sys::fail(errc::invalid, "context: no devices given; a context needs at least one");
  const auto n = platform().devices.size();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].index() >= n)
      sys::fail(errc::invalid, cat("context: device index ", devices[i].index(), " is not one of the ", n,
                                   " configured devices"));
    for (std::size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j])
        sys::fail(errc::invalid, cat("context: device '", devices[i].name(), "' is listed twice"));
  }
  state_ = std::make_shared<const state>(state{next_context_id(), std::move(devices)});
}

const std::vector<device>& context::devices() const noexcept { return state_->devices; }

bool context::contains(const device& d) const noexcept {
  for (const auto& x : state_->devices)
    if (x == d) return true;
  return false;
}

std::uint64_t context::id() const noexcept { return state_->id; }

}  // namespace ipcref
