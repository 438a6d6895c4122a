// The supervisor: the one place that forks and execs (docs/ARCHITECTURE.md, "The process
// model"). It starts a child by fork + exec in its own process group, with
// PR_SET_PDEATHSIG, a close-on-exec status pipe that reports a failed exec, and its stdout
// and stderr captured into one pipe (or written to a log file), then watches, waits for,
// kills and reaps it. Its callers are the parents that never load a GPU runtime: the
// runner, the fuzz campaign and `ipcheck bench`; every child they start is reaped.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ipcref/unique_fd.hpp"

namespace ipcheck {

using ipcref::unique_fd;

struct SpawnSpec {
  std::string executable;              // absolute path
  std::vector<std::string> args;       // argv[1..]
  std::vector<std::string> env;        // "KEY=VALUE" set on top of the runner's environment
  int channel_fd = -1;                 // becomes fd 3 in the child (closed there when -1)
  // Empty: stdout and stderr go to a pipe the parent reads (read_output, output_tail).
  // Otherwise they go to this file, created before the fork; it must not exist yet (O_EXCL,
  // O_NOFOLLOW: nothing planted there is followed or truncated), so callers name a file in
  // a folder of their own (bench's private temporary folder).
  std::string output_file;
  // A role (the default): started with least privilege (docs/security.md, "What a role may do"):
  // no_new_privs, every capability dropped (bounding set included) but what taking a
  // peer's descriptor needs (role_capabilities()), and the environment reduced to
  // role_environment_allowed() plus `env`. false for a child that is itself a whole
  // ipcheck run (bench's timed `ipcheck run` and `ipcheck fuzz`): it starts its own roles
  // this way, and may need what a parent needs (the BPF audit loads its programs there).
  bool role = true;
};

// Whether an environment variable of the runner reaches a role: the allow-list of the
// docs/security.md's "What a role may do" (PATH, HOME, the loader's LD_LIBRARY_PATH and LD_PRELOAD,
// locale and temporary folder, the adapters' own CUDA_*, ZE_*, UR_*, UMF_*, SYCL_*, VK_*,
// MESA_*, the sanitizers' *SAN_OPTIONS, IPCHECK_*, IPCREF_*), and the names listed in
// IPCHECK_ROLE_ENV (comma-separated). Everything else (CI secrets: AWS_*, GITHUB_TOKEN)
// stays with the runner.
bool role_environment_allowed(std::string_view name);
// The capabilities a role keeps (a bit mask of CAP_* numbers): none, except CAP_SYS_PTRACE
// where Yama's ptrace_scope is 2 (then only it lets pidfd_getfd take a peer's descriptor;
// with scope 0 or 1 a role of the same user, with the same reduced capability set as its
// peer and dumpable, passes the kernel's ptrace check without any capability).
unsigned long long role_capabilities();

// Who a role runs as. Under a root runner a role owns nothing: it runs as an unprivileged
// uid and gid, without supplementary groups: IPCHECK_ROLE_USER (a user name or a uid; "root"
// keeps roles root), else the user ipcheck-role where it exists, else a transient uid of this
// runner's own, kTransientRoleUid + its pid, which no file and no other process has. All the
// roles of a run share it, so a role takes its peers' descriptors (pidfd_getfd: the kernel's
// ptrace check passes between processes of one uid, dumpable, with the same capabilities).
// Its HOME and TMPDIR are a temporary folder of its own (mode 0700, removed when the runner
// exits). An unprivileged runner's roles stay its user (drop is false).
struct RoleUser {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;  // the role's HOME and TMPDIR ("" when none could be made)
  std::string how;   // "as transient uid 1610613000", for messages
};
inline constexpr uid_t kTransientRoleUid = 0x60000000;
const RoleUser& role_user();

// A failed exec, with the errno the child reported.
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& what, int err) : std::runtime_error(what), error(err) {}
  int error;
};

struct ExitStatus {
  bool exited = false;  // true: code is valid; false: signal is valid
  int code = 0;
  int signal = 0;
  std::string describe() const;  // "exit 0", "signal SIGSEGV"
};

class RoleProcess {
 public:
  static constexpr std::size_t kTailBytes = 8192;

  // Throws SpawnError when exec fails (the child is reaped before it returns).
  static RoleProcess spawn(const SpawnSpec& spec);
  // Forks and returns at once; confirm_exec() then waits for the exec. Starting several
  // processes before confirming any lets their execs run side by side.
  static RoleProcess start(const SpawnSpec& spec);
  // Waits until the child's exec succeeded or failed; throws SpawnError (the child reaped)
  // when it failed. Does nothing once confirmed.
  void confirm_exec();

  RoleProcess() = default;
  RoleProcess(RoleProcess&& o) noexcept { *this = std::move(o); }
  RoleProcess& operator=(RoleProcess&& o) noexcept;
  // Kills the whole group and reaps the child if that has not happened.
  ~RoleProcess();

  pid_t pid() const noexcept { return pid_; }
  int pidfd() const noexcept { return pidfd_.get(); }    // readable when the child exits
  int output_fd() const noexcept { return output_.get(); }
  std::chrono::steady_clock::time_point started() const noexcept { return started_; }

  // Reads what output is available; false once the pipe reached end of file.
  bool read_output();
  const std::string& output_tail() const noexcept { return tail_; }
  bool output_open() const noexcept { return static_cast<bool>(output_); }
  // A kept role taken by another case (--reuse-roles): what it wrote so far is read and
  // forgotten, and its time counts from now.
  void begin_reuse();

  // Reaps the child if it has exited; the status once known.
  const std::optional<ExitStatus>& poll_exit();
  // Waits up to `limit` for the child to exit (reading its output pipe meanwhile) and
  // reaps it. Empty when it outlived `limit`: its group is then killed and reaped.
  // With `stop`: once *stop turns true (a signal handler sets it) the group gets SIGTERM,
  // and SIGKILL when it outlives `grace`.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds limit, const std::atomic<bool>* stop = nullptr,
                                     std::chrono::milliseconds grace = std::chrono::seconds(5));
  const std::optional<ExitStatus>& status() const noexcept { return status_; }

  // Signals the role's process group (the role and whatever it forked).
  void signal_group(int sig) const noexcept;
  // Processes other than the role still in its group, as "pid (comm)". Once the role is
  // reaped the group's id may belong to another program's group: then only descendants of
  // this process count (a parent that is its children's subreaper finds all of them).
  // Members already dead that this process inherited as their subreaper are reaped on the
  // way (not survivors, and no zombie is left until the run ends): hence not const.
  std::vector<std::string> group_survivors();

 private:
  void kill_and_reap() noexcept;
  pid_t pid_ = 0;
  unique_fd pidfd_;
  unique_fd exec_status_;  // read end of the close-on-exec status pipe, until confirmed
  std::string executable_;
  unique_fd output_;
  std::string tail_;
  std::optional<ExitStatus> status_;
  std::chrono::steady_clock::time_point started_{};
};

// Makes the calling process the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER),
// so grandchildren that escape their group can still be found and reaped.
void become_subreaper();
// Kills and reaps every child of this process not in `keep` (orphans that were
// re-parented here); returns them as "pid (comm)".
std::vector<std::string> reap_orphans(const std::vector<pid_t>& keep = {});

// A pid that names no process: a child forked, exited and reaped (empty if fork failed).
std::optional<pid_t> reaped_pid();

// This executable's path (/proc/self/exe): what roles are exec'd from by default.
std::string self_executable();
// The program a run execs for its roles (and a fuzz campaign for its processes): the one
// set_role_program names, found where ipcheck's helper programs are (install_layout.hpp),
// else this executable. `ipcheck` names `ipcheck-role`: the same roles without the report
// and store code and the libraries only those need (SQLite, zlib, libpq), so each role
// process starts for less; test programs name none and run their own roles.
void set_role_program(std::string name);
std::string role_executable();
// The role program for `adapter`: role_executable(), except for an adapter whose runtime
// throws C++ exceptions through the shared libstdc++ (AdapterDesc::shared_cxx_runtime: sycl):
// the same program linked with the shared libstdc++ and libgcc (`<role program>-shared`), since
// a role with its own copy linked in cannot catch what the runtime throws (it aborts).
std::string role_executable_for(const std::string& adapter);
// The last line of `text` that holds more than spaces, without its trailing spaces ("" if
// none): what a person is shown of a process's output tail.
std::string last_line(const std::string& text);

std::string signal_name(int sig);
// A system call that failed with `err`, and for limit errors (EAGAIN, EMFILE, ENFILE,
// ENOMEM) which limit of the machine it was and the fix.
std::string limit_error(const char* call, int err);

}  // namespace ipcheck
