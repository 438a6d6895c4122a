// A role's least privilege (docs/security.md, "What a role may do"): the environment that
// reaches it, the user it runs as, the capabilities it keeps, and their dropping in the child
// between fork and exec (spawn_privileges.hpp). The supervisor is spawn.cpp.
#include "spawn_privileges.hpp"

#include <ftw.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace ipcheck {

namespace spawn_detail {

Privileges role_privileges(const SpawnSpec& spec) {
  // Read once per process: the kernel's highest capability and Yama's scope do not change
  // under a run (a thread-safe static: the runner starts roles from worker threads).
  static const Privileges kRole = [] {
    Privileges p;
    p.reduce = true;
    p.keep = role_capabilities();
    p.last_cap = 63;
    std::ifstream in("/proc/sys/kernel/cap_last_cap");
    int n = 0;
    if (in >> n && n >= 0 && n < 64) p.last_cap = n;
    const RoleUser& u = role_user();
    p.change_user = u.drop;
    p.uid = u.uid;
    p.gid = u.gid;
    return p;
  }();
  return spec.role ? kRole : Privileges{};
}

bool drop_privileges(const Privileges& p) noexcept {
  if (!p.reduce) return true;
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  for (int cap = 0; cap <= p.last_cap; ++cap)
    if (!(p.keep >> cap & 1)) ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (p.change_user) {
    if (p.keep) ::prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS, 0, 0, 0);
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0 ||
        ::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0)
      return false;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return !p.change_user || ::getuid() == p.uid;
  for (int i = 0; i < 2; ++i) {
    const auto keep = static_cast<std::uint32_t>(p.keep >> (32 * i));
    data[i].permitted &= keep;
    data[i].effective &= keep;
    data[i].inheritable = p.change_user ? data[i].permitted : 0;
  }
  (void)::syscall(SYS_capset, &header, data);
  if (p.change_user)
    for (int cap = 0; cap <= p.last_cap; ++cap)
      if (p.keep >> cap & 1) ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
  return true;
}

}  // namespace spawn_detail

namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

// The role user's temporary home, removed when the runner exits.
struct RoleHome {
  std::string path;
  ~RoleHome() {
    if (!path.empty()) ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
};

}  // namespace

bool role_environment_allowed(std::string_view name) {
  static constexpr std::string_view exact[] = {
      "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LD_LIBRARY_PATH", "LD_PRELOAD",
      "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS",
      "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "MSAN_OPTIONS", "ASAN_SYMBOLIZER_PATH",
      "LLVM_SYMBOLIZER_PATH", "LLVM_PROFILE_FILE", "REPRO_LIBCUDA"};
  static constexpr std::string_view prefixes[] = {"LC_",   "IPCHECK_", "IPCREF_", "CUDA_", "ZE_", "UR_",     "UMF_",
                                                  "SYCL_", "ONEAPI_",  "VK_",     "MESA_", "LP_", "GALLIUM_", "NEO_"};
  for (auto e : exact)
    if (name == e) return true;
  for (auto p : prefixes)
    if (name.substr(0, p.size()) == p) return true;
  // More names by the person running ipcheck: IPCHECK_ROLE_ENV=NAME,NAME.
  if (const char* extra = std::getenv("IPCHECK_ROLE_ENV")) {
    std::string_view list(extra);
    while (!list.empty()) {
      const auto comma = list.find(',');
      if (list.substr(0, comma) == name) return true;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return false;
}

const RoleUser& role_user() {
  static RoleHome home;
  static const RoleUser user = [] {
    RoleUser u;
    if (::geteuid() != 0) return u;
    const char* asked = std::getenv("IPCHECK_ROLE_USER");
    const std::string want = asked && *asked ? asked : "";
    if (want == "root" || want == "0") {
      u.how = "as root (IPCHECK_ROLE_USER=" + want + ")";
      return u;
    }
    u.drop = true;
    const passwd* pw = nullptr;
    if (!want.empty()) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(want.c_str(), &end, 10);
      if (*end == '\0' && n > 0 && n < 0xFFFFFFFFul) {
        u.uid = static_cast<uid_t>(n);
        u.gid = static_cast<gid_t>(n);
        u.how = "as uid " + want + " (IPCHECK_ROLE_USER)";
      } else if ((pw = ::getpwnam(want.c_str())) && pw->pw_uid != 0) {
        u.uid = pw->pw_uid;
        u.gid = pw->pw_gid;
        u.how = "as user " + want + " (IPCHECK_ROLE_USER)";
      } else {
        u.uid = u.gid = kTransientRoleUid + static_cast<uid_t>(::getpid());
        u.how = "as transient uid " + std::to_string(u.uid) + " (IPCHECK_ROLE_USER=" + want +
                " names no unprivileged user)";
      }
    } else if ((pw = ::getpwnam("ipcheck-role")) && pw->pw_uid != 0) {
      u.uid = pw->pw_uid;
      u.gid = pw->pw_gid;
      u.how = "as user ipcheck-role";
    } else {
      u.uid = u.gid = kTransientRoleUid + static_cast<uid_t>(::getpid());
      u.how = "as transient uid " + std::to_string(u.uid);
    }
    // In the runner's TMPDIR where the role's user may pass through it, else in /tmp.
    const char* tmp = std::getenv("TMPDIR");
    struct stat st {};
    const bool usable = tmp && *tmp == '/' && ::stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IXOTH);
    std::string dir = std::string(usable ? tmp : "/tmp") + "/ipcheck-role-home.XXXXXX";
    if (::mkdtemp(dir.data()) || (dir = "/tmp/ipcheck-role-home.XXXXXX", ::mkdtemp(dir.data()))) {
      if (::chown(dir.c_str(), u.uid, u.gid) == 0 && ::chmod(dir.c_str(), 0700) == 0) {
        u.home = dir;
        home.path = dir;
      } else {
        ::rmdir(dir.c_str());
      }
    }
    return u;
  }();
  return user;
}

unsigned long long role_capabilities() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (in >> scope && scope == 2) return 1ull << CAP_SYS_PTRACE;
  return 0;
}

}  // namespace ipcheck
