// Cases: a dotted id, a one-line description, the clauses it checks, and one body per
// role. Bodies read like the spec: export, send, receive, open, check, close.
//
//   IPCHECK_CASE(Case("memory.roundtrip.page", "Producer data reaches the consumer and back")
//                    .clause("sycl.mem.roundtrip")
//                    .role("producer", produce)
//                    .role("consumer", consume));
#pragma once

#include <csignal>
#include <functional>
#include <initializer_list>
#include <source_location>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/reports/results.hpp"

namespace ipcheck {

class Role;
using RoleBody = std::function<void(Role&)>;

// What a case needs of the adapter and its devices, judged from what the adapter says of
// itself (`adapter`: its name; `info`: its AdapterInfo): why the case cannot run there, or
// nothing when it can. The runner judges it from the adapter probe's info before any of the
// case's roles starts (a GPU runtime's start costs a context: half a second on an H200), and
// each role judges it again after its adapter's init, so a case runs or skips alike with or
// without a probe. Bodies keep their own checks for what they pick (which device, say).
using Precondition = std::function<std::optional<std::string>(const std::string& adapter, const AdapterInfo& info)>;
// A precondition the runtime under test answers (a verb it says it lacks): a skip it causes is
// the runtime's (reports::CaseResult::skip_by "runtime"), not the machine's or the selection's.
struct RuntimeNeed {
  Precondition check;
};

struct RoleDef {
  std::string name;  // base name; with count > 1 the instances are name0, name1, ...
  int count = 1;
  RoleBody body;
  bool injection_only = false;  // started only in runs that inject a fault into the case
  bool on_demand = false;       // each instance started when a role first sends it a message
};

// A fault-injection point: the runner kills role `role` (a base name) with SIGKILL when it
// announces protocol step `step`. Written "consumer:after_open".
struct InjectPoint {
  std::string role;
  std::string step;
  std::string describe() const { return role + ":" + step; }
  explicit operator bool() const { return !role.empty(); }
  // "ROLE:STEP"; empty when either part is missing.
  static std::optional<InjectPoint> parse(const std::string& text);
};

struct CaseDef {
  std::string id;
  std::string description;
  std::vector<std::string> clauses;
  std::vector<RoleDef> roles;
  double timeout_s = 0;                    // 0: the run's --timeout
  std::vector<std::string> allowed_leaks;  // audit items (substrings) a role may keep at its end
  std::vector<std::string> steps;          // fault-injection points its roles announce, "role:step"
  std::vector<std::string> expendable;     // roles whose death by a signal is an outcome to observe, not a crash
  bool hidden = false;                     // harness self-tests: listed only on request
  std::vector<std::string> params;         // --param keys its roles read (Role::param)
  // The largest value each of `params` takes (a count: 1 to this). A count sizes a loop or an
  // allocation, so the command line refuses a larger one before any case runs.
  std::map<std::string, long> param_max;
  // Its roles use several devices (a second one, one without an aspect, every pair): they see
  // every device of the machine. Otherwise the runner may give the case one device of
  // several (the adapter's device mask), so cases spread over a machine's GPUs.
  bool all_devices = false;
  // Its roles use the event verbs (Case::events); an id with a part that starts with
  // "event" (event.*, *.event, stress.event_roundtrips) says so too. A role of a case
  // that does not starts its adapter without events (AdapterConfig::events).
  bool events = false;
  bool uses_events() const;
  // Why its roles need fresh processes even in a run that reuses roles (--reuse-roles;
  // Case::fresh_process); "" leaves it to the runner's rule (runner_pool.hpp).
  std::string fresh_process;
  // Failpoints of the layers under a role (ipcref/failpoints.hpp): role base name -> the
  // IPCHECK_FAILPOINTS spec its processes get (Case::failpoint), recorded in results.json.
  std::map<std::string, std::string> failpoints;
  // More environment for a role's processes ("KEY=VALUE"; Case::environment): a runtime's
  // own knob that makes it reach the driver where a failpoint waits (a pool turned off).
  std::map<std::string, std::vector<std::string>> role_env;
  std::vector<Precondition> preconditions;  // Case::needs
  std::vector<bool> runtime_needs;          // per precondition: a RuntimeNeed
  // The reason of the first precondition `adapter` and `info` do not meet; nothing when all
  // hold. `by_runtime`: whether that one is a RuntimeNeed.
  std::optional<std::string> unmet(const std::string& adapter, const AdapterInfo& info, bool* by_runtime = nullptr) const;

  std::string area() const { return id.substr(0, id.find('.')); }
  // Role instance names in spawn order ("producer", "consumer0", "consumer1").
  std::vector<std::string> instance_names() const;
  const RoleDef* role_for(const std::string& instance, int* index = nullptr) const;
};

class Case {
 public:
  Case(std::string id, std::string description);
  Case& clause(std::string id);
  Case& clauses(std::initializer_list<std::string> ids);
  Case& role(std::string name, RoleBody body);
  Case& roles(std::string name, int count, RoleBody body);
  // Up to `count` instances (name0, name1, ...), none started with the case: each starts
  // when another role first sends it a message, and one never sent to never runs. For work
  // handed to fresh processes one after another (a variant that kills its process is judged,
  // and the rest go to the next): as many processes as the work needs, no more.
  Case& on_demand_roles(std::string name, int count, RoleBody body);
  Case& timeout(double seconds);
  Case& allow_leak(std::string item_substring);
  // Fault-injection points: the steps `role` announces with Role::step or Role::step_into.
  Case& steps(const std::string& role, std::initializer_list<std::string> names);
  // A role started only when the run injects a fault into the case: the process that
  // comes after a crash (a new consumer opening the handle a killed one held).
  Case& injection_role(std::string name, RoleBody body);
  // A role that may die doing something the spec leaves undefined; a peer observes how it ended.
  Case& expendable(std::string role);
  Case& hidden();
  // A --param key the case's roles read, a count from 1 to `max`; a run refuses a key no
  // selected case declares, and a value that is not such a count.
  Case& param(std::string key, long max);
  // Its roles use more than one device: they see every device (CaseDef::all_devices).
  Case& all_devices();
  // Its roles use the event verbs though its id does not say so (CaseDef::uses_events).
  Case& events();
  // Its roles start in fresh processes even where the run reuses roles (--reuse-roles):
  // what it checks is a process's first use of the runtime, or it may leave the runtime
  // changed for the next case. `why` is said in docs and kept in the catalog.
  Case& fresh_process(std::string why);
  // Makes entry points of the layers under `role` (our Level Zero driver, ipcref) fail or
  // withhold a capability: `spec` is an IPCHECK_FAILPOINTS value (ipcref/failpoints.hpp,
  // lib/zedriver/README.md), checked here; a malformed one throws std::invalid_argument.
  Case& failpoint(std::string role, std::string spec);
  // Adds "KEY=VALUE" to `role`'s environment (recorded with its failpoints in results.json).
  Case& environment(std::string role, std::string key_value);
  // A precondition (see Precondition): where it is not met the case is a skip with its reason.
  Case& needs(Precondition precondition);
  Case& needs(RuntimeNeed need);
  CaseDef def;
};

// The catalog lists cases in source order (the registering file's path, then its line), not
// in the order static initialisers happened to run: a build that links differently (a unity
// build, another link order) lists, runs and reports the same cases in the same order.
// register_case called outside a CaseRegistration takes the place of the registration it
// runs in, or the end of the list.
void register_case(CaseDef def);
// The whole catalog: the first call builds every case IPCHECK_CASE registered.
const std::vector<CaseDef>& cases();
// One case. Before the catalog is built (a role process, which needs its own case only) it
// builds just the registration whose IPCHECK_CASE text names `id` (`Case("<id>", ...`),
// keeping it apart from the catalog (the pointer stays valid; `cases()` builds the catalog
// whole, with a case of its own for it); a registration that names no id in its text (one
// that registers several) builds the catalog.
const CaseDef* find_case(const std::string& id);
// Whether the whole catalog was built in this process (`cases()`; a role's find_case does not).
bool catalog_built();
// The id an IPCHECK_CASE's text names (`Case("<id>"` at its start, spaces allowed), or "" when
// it names none (a function, a name, an escape in the literal). IPCHECK_CASE reads it when it
// is compiled.
constexpr std::string_view case_id_in_text(std::string_view t) {
  const auto skip = [&t] {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\n' || t.front() == '\t')) t.remove_prefix(1);
  };
  skip();
  if (!t.starts_with("Case")) return {};
  t.remove_prefix(4);
  skip();
  if (!t.starts_with("(")) return {};
  t.remove_prefix(1);
  skip();
  if (!t.starts_with("\"")) return {};
  t.remove_prefix(1);
  const auto end = t.find_first_of("\"\\");
  if (end == std::string_view::npos || t[end] != '"') return {};
  return t.substr(0, end);
}
// A case's id, kept when IPCHECK_CASE is compiled (the text it came from is not: only the id
// goes into the program).
template <std::size_t N>
struct CaseIdText {
  char text[N + 1] = {};
  consteval explicit CaseIdText(std::string_view id) {
    for (std::size_t i = 0; i < N; ++i) text[i] = id[i];
  }
  constexpr std::string_view view() const { return {text, N}; }
};

struct CaseRegistration {
  // Registers now (tests, and code that runs after start-up).
  CaseRegistration(Case c, std::source_location where = std::source_location::current());  // NOLINT: implicit
  explicit CaseRegistration(const std::function<void()>& add_many,
                            std::source_location where = std::source_location::current());
  // What IPCHECK_CASE defines: `id` is the one its argument names ("" when it names none),
  // `build` registers what it builds when the catalog is first read. Start-up only records
  // them: a role process builds its own case and no other (every role used to build the whole
  // catalog before main, a third of its start-up; bench: harness/two_role_case/start).
  using Build = void (*)();
  CaseRegistration(std::string_view id, Build build, std::source_location where = std::source_location::current());
};

#define IPCHECK_CONCAT_INNER(a, b) a##b
#define IPCHECK_CONCAT(a, b) IPCHECK_CONCAT_INNER(a, b)
// What IPCHECK_CASE's build registers: a case built in the macro's argument (a temporary
// whose builder calls return Case&), moved, not copied; given a function, what it registers.
inline void register_built(Case& c) { register_case(std::move(c.def)); }
template <class F>
void register_built(F&& add_many) {
  add_many();
}
// Registers a case (or, given a function, runs it to register several) when the catalog is
// first read. Write its argument as `Case("<id>", ...)...` so that a role finds it by its id.
#define IPCHECK_CASE(...)                                                                          \
  static const ::ipcheck::CaseRegistration IPCHECK_CONCAT(ipcheck_case_, __COUNTER__) {             \
    [] {                                                                                            \
      static constexpr ::ipcheck::CaseIdText<::ipcheck::case_id_in_text(#__VA_ARGS__).size()> id{   \
          ::ipcheck::case_id_in_text(#__VA_ARGS__)};                                                \
      return id.view();                                                                             \
    }(),                                                                                            \
        [] { ::ipcheck::register_built(__VA_ARGS__); }                                              \
  }

// Thrown to end a role body early: after a failed requirement (already reported), a
// skip, or a broken barrier. Case bodies never catch it.
struct RoleAbort {
  std::string why;
};

struct Received {
  std::string from;
  std::string tag;
  std::vector<std::byte> bytes;
  unique_fd fd;
};

// Where a check was made, captured as a default argument. Our own type over the compiler
// builtins: clang 14 with libstdc++ 12 (the fuzz preset) has no std::source_location.
class Where {
 public:
  static constexpr Where current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) noexcept {
    return Where(file, line);
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr unsigned line() const noexcept { return line_; }

 private:
  constexpr Where(const char* file, unsigned line) noexcept : file_(file), line_(line) {}
  const char* file_;
  unsigned line_;
};

// What a check rests on, and so who decided it: the runtime under test (an outcome of one
// of its calls, or bytes read through a mapping it made), the adapter's own code, or
// ipcheck's bookkeeping (its ids, records, clocks). A check resting on several outcomes is
// the runtime's only when every one of them is.
class Evidence {
 public:
  static Evidence harness() { return Evidence(reports::Decider::harness); }
  static Evidence adapter() { return Evidence(reports::Decider::adapter); }
  static Evidence of(const Outcome& o);
  // Starts a tally over many answers (a loop of opens): each with() can only weaken it.
  static Evidence tally() { return Evidence(reports::Decider::runtime); }
  // Also rests on `o` (or `e`): the weaker attribution wins, the first runtime call is kept.
  Evidence& with(const Outcome& o);
  Evidence& with(const Evidence& e);

  reports::Decider by = reports::Decider::harness;
  std::string call;  // the runtime call that decided it
  long long native = 0;
  std::string native_name;

 private:
  explicit Evidence(reports::Decider d) : by(d) {}
};

// A judgement with its evidence: a value the runtime (or the adapter) gave, for example
// whether an event is signaled, with the outcome of the call that said so.
struct Seen {
  bool value = false;
  Evidence by = Evidence::harness();
  explicit operator bool() const { return value; }
  Seen operator!() const { return {!value, by}; }
};

class Role {
 public:
  virtual ~Role() = default;

  virtual Adapter& adapter() = 0;
  virtual const std::string& name() const = 0;       // "consumer3"
  virtual const std::string& base_name() const = 0;  // "consumer"
  virtual int index() const = 0;                     // 3
  virtual std::vector<std::string> peers() const = 0;
  virtual int pid_of(const std::string& role) const = 0;
  virtual const std::string& adapter_name() const = 0;
  // --param key=value given to the run (sizes, iteration counts for stress cases).
  virtual std::string param(const std::string& key, const std::string& fallback) const = 0;

  // ---- talking (through the runner)
  virtual void send(const std::string& to, const std::string& tag, std::span<const std::byte> bytes,
                    int fd = -1) = 0;
  // Sends an export; its descriptor goes along when the handle convention or the run's
  // transport needs it.
  virtual void send_handle(const std::string& to, const std::string& tag, const Exported& e) = 0;
  virtual Received receive(const std::string& tag) = 0;
  // Waits until every role of the case still running has reached `name`.
  virtual void barrier(const std::string& name) = 0;
  // Waits until `role` has ended; returns how ("exit 0", "signal SIGKILL").
  virtual std::string wait_exit(const std::string& role) = 0;
  // Waits until one of `roles` has ended (the first in `roles` already ended, else the next
  // to end); returns its name and sets `how`. For work spread over several processes at once.
  virtual std::string wait_exit_any(const std::vector<std::string>& roles, std::string& how) = 0;
  // Has the runner kill `role` (an expected death: not a crash of the case).
  virtual void kill(const std::string& role, int signal = SIGKILL) = 0;
  // A named protocol step; under --inject the runner may kill this role here.
  virtual void step(const std::string& name) = 0;
  // A step announced on the way into a blocking call (an event wait): returns at once, and
  // under --inject the runner kills this role once it is blocked in that call.
  virtual void step_into(const std::string& name) = 0;
  // The fault the runner injects into this run of the case (empty without --inject), so
  // that bodies can survive a peer's death as the clauses say (rb.consumer.crash,
  // rb.producer.crash) instead of waiting for messages that will never come.
  virtual const InjectPoint& injection() const = 0;
  // Whether the runner kills role `base` (a base name) in this run, at any step.
  bool peer_killed(const std::string& base) const { return injection() && injection().role == base; }

  // ---- judging
  // Judges `ok` for `clause`; `by` says who decided it (see Evidence). Without evidence the
  // check is ipcheck's own (decided by the harness): a case passes the outcome or Seen value
  // it judged whenever the runtime's answer decides.
  virtual bool check(bool ok, const Evidence& by, std::string_view clause, const std::string& message,
                     Where w = Where::current()) = 0;
  bool check(bool ok, std::string_view clause, const std::string& message, Where w = Where::current()) {
    return check(ok, Evidence::harness(), clause, message, w);
  }
  bool check(const Seen& s, std::string_view clause, const std::string& message, Where w = Where::current()) {
    return check(s.value, s.by, clause, message, w);
  }
  // Checks made while a SetupSteps lives are set-up steps (allocate, export, open the real
  // handle): their failure fails the case, their pass decides nothing about the clause.
  // Returns the previous setting.
  virtual bool set_setup(bool on) = 0;
  bool check_ok(const Outcome& o, std::string_view clause, const std::string& what, Where w = Where::current());
  bool check_error(const Outcome& o, Errc expected, std::string_view clause, const std::string& what,
                   Where w = Where::current());
  // Like check, but ends the role body on failure.
  void require(bool ok, std::string_view clause, const std::string& message, Where w = Where::current());
  void require(bool ok, const Evidence& by, std::string_view clause, const std::string& message,
               Where w = Where::current());
  void require(const Seen& s, std::string_view clause, const std::string& message, Where w = Where::current()) {
    require(s.value, s.by, clause, message, w);
  }
  template <class T>
  T require(Result<T> r, std::string_view clause, const std::string& what, Where w = Where::current()) {
    if (!check_ok(r.outcome, clause, what, w)) throw RoleAbort{what + " failed"};
    return std::move(r.value);
  }
  void require_ok(const Outcome& o, std::string_view clause, const std::string& what, Where w = Where::current());
  virtual void observe(const std::string& name, const std::string& value, std::string_view clause = {}) = 0;
  // Says the role could not run for a reason of the harness or the machine (a descriptor or
  // process limit, /proc unreadable): the case is `error`, nothing is charged to the adapter.
  [[noreturn]] virtual void harness_error(const std::string& cause) = 0;
  // Records a native error seen on the way (also done by check_ok/check_error).
  virtual void native_error(const std::string& verb, const Outcome& o) = 0;
  // `by`: whose reason it is (reports::CaseResult::skip_by): "runtime" where the runtime
  // under test said it lacks what the case needs, "" for the machine's, the selection's or the
  // case's own reasons. A skip of the runtime's in a case that passed before is a regression.
  [[noreturn]] virtual void skip(const std::string& reason, const std::string& by = {}) = 0;
  // Skips with the outcome's message when it says the verb or feature is not there (by the
  // runtime where the runtime said so).
  void skip_if_unsupported(const Outcome& o, const std::string& what);
  // A line in the role's output (kept in the report's output tail).
  virtual void note(const std::string& text) = 0;
  // Sends a named JSON document to the runner (campaign statistics, benchmark figures).
  virtual void data(const std::string& key, const std::string& json) = 0;
};

// The calls the layers under this role's process failed so far by its case's failpoints
// (Case::failpoint): how many, and the last one ("zeMemFree call 1 answered
// ZE_RESULT_ERROR_DEVICE_LOST"). Counted from the body's start; a role compares the count
// around a verb to know whether the driver failed inside it. Zero outside a role.
struct FailpointsFired {
  unsigned count = 0;
  std::string last;
};
FailpointsFired failpoints_fired();

// Marks the checks made during its life as set-up steps (Role::set_setup).
class SetupSteps {
 public:
  explicit SetupSteps(Role& r) : r_(r), was_(r.set_setup(true)) {}
  ~SetupSteps() { r_.set_setup(was_); }
  SetupSteps(const SetupSteps&) = delete;
  SetupSteps& operator=(const SetupSteps&) = delete;

 private:
  Role& r_;
  bool was_;
};

// Deterministic byte patterns that expose wrong offsets and stale data: byte i of the
// pattern for `seed` depends on both i and seed.
std::vector<std::byte> pattern(std::uint64_t seed, std::size_t bytes, std::size_t offset = 0);
// Index of the first byte of `got` that differs from the pattern, or npos.
std::size_t first_mismatch(std::span<const std::byte> got, std::uint64_t seed, std::size_t offset = 0);

}  // namespace ipcheck
