// Registries of clauses and cases, filled at start-up by cases/.
#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <stdexcept>
#include <tuple>

#include "ipcref/failpoints.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"

namespace ipcheck {

namespace {

// Where a registration stands in the source: its file's path and line.
struct Place {
  std::string file;
  std::uint_least32_t line = 0;
  bool operator<(const Place& o) const { return std::tie(file, line) < std::tie(o.file, o.line); }
};

// The registration running now (CaseRegistration, ClauseRegistration); none: after every path.
Place& current_place() {
  static Place p{"\x7f", 0};
  return p;
}

// A registry in source order: each entry goes after those of earlier places and after those
// of its own place (several cases of one registration keep their order).
template <class T>
struct Registry {
  std::vector<T> items;
  std::vector<Place> places;

  void add(T item) {
    const auto at = std::upper_bound(places.begin(), places.end(), current_place());
    items.insert(items.begin() + (at - places.begin()), std::move(item));
    places.insert(at, current_place());
  }
  const T* find(const std::string& id) const {
    for (const auto& x : items)
      if (x.id == id) return &x;
    return nullptr;
  }
};

Registry<Clause>& clause_registry() {
  static Registry<Clause> r;
  return r;
}
Registry<CaseDef>& case_registry() {
  static Registry<CaseDef> r;
  return r;
}

// Sets the current place for the registration's life.
class AtPlace {
 public:
  explicit AtPlace(const std::source_location& where) : saved_(current_place()) {
    current_place() = Place{where.file_name(), where.line()};
  }
  ~AtPlace() { current_place() = saved_; }
  AtPlace(const AtPlace&) = delete;
  AtPlace& operator=(const AtPlace&) = delete;

 private:
  Place saved_;
};

}  // namespace

void register_clause(Clause c) {
  if (clause_registry().find(c.id)) throw std::logic_error("clause " + c.id + " is registered twice");
  clause_registry().add(std::move(c));
}

const std::vector<Clause>& clauses() { return clause_registry().items; }

const Clause* find_clause(const std::string& id) { return clause_registry().find(id); }

ClauseRegistration::ClauseRegistration(std::vector<Clause> list, std::source_location where) {
  AtPlace at(where);
  for (auto& c : list) register_clause(std::move(c));
}

namespace {

// An IPCHECK_CASE not built yet.
struct Pending {
  std::string_view id;  // "" when its text names none
  CaseRegistration::Build build;
  std::source_location where;
};

struct LazyCatalog {
  std::mutex lock;
  std::vector<Pending> pending;  // in registration order
  std::once_flag built;
  bool is_built = false;
  std::deque<CaseDef> alone;     // cases find_case built before the catalog was (stable addresses)
  std::deque<CaseDef>* sink = nullptr;  // while one is built alone: where register_case puts it
};
LazyCatalog& lazy() {
  static LazyCatalog* l = new LazyCatalog;  // never destroyed: usable from static destructors
  return *l;
}

void check_case(const CaseDef& def) {
  if (def.roles.empty()) throw std::logic_error("case " + def.id + " has no role");
  for (const auto& s : def.steps) {
    const auto p = InjectPoint::parse(s);
    if (!p || std::none_of(def.roles.begin(), def.roles.end(), [&](const RoleDef& r) { return r.name == p->role; }))
      throw std::logic_error("case " + def.id + " declares step '" + s + "' for a role it does not have");
  }
}

// Builds every IPCHECK_CASE into the catalog, once.
void build_catalog() {
  auto& l = lazy();
  std::call_once(l.built, [&] {
    std::vector<Pending> all;
    {
      std::lock_guard g(l.lock);
      all = l.pending;
    }
    for (const auto& p : all) {
      AtPlace at(p.where);
      p.build();
    }
    std::lock_guard g(l.lock);
    l.pending.clear();
    l.is_built = true;
  });
}

}  // namespace

void register_case(CaseDef def) {
  check_case(def);
  if (auto* sink = lazy().sink) {
    sink->push_back(std::move(def));
    return;
  }
  if (case_registry().find(def.id)) throw std::logic_error("case " + def.id + " is registered twice");
  case_registry().add(std::move(def));
}

bool catalog_built() {
  auto& l = lazy();
  std::lock_guard g(l.lock);
  return l.is_built;
}

const std::vector<CaseDef>& cases() {
  build_catalog();
  return case_registry().items;
}

const CaseDef* find_case(const std::string& id) {
  auto& l = lazy();
  {
    std::unique_lock g(l.lock);
    if (!l.is_built) {
      for (const auto& c : l.alone)
        if (c.id == id) return &c;
      for (const auto& p : l.pending) {
        if (p.id.empty() || p.id != id) continue;
        const std::size_t had = l.alone.size();
        l.sink = &l.alone;
        try {
          AtPlace at(p.where);
          p.build();
        } catch (...) {
          l.sink = nullptr;
          throw;
        }
        l.sink = nullptr;
        for (std::size_t i = had; i < l.alone.size(); ++i)
          if (l.alone[i].id == id) return &l.alone[i];
        break;  // its text named the id and it built another: the catalog decides
      }
    }
  }
  build_catalog();
  return case_registry().find(id);
}

CaseRegistration::CaseRegistration(Case c, std::source_location where) {
  build_catalog();  // a case registered now goes after (or among, by its place) the catalog
  AtPlace at(where);
  register_case(std::move(c.def));
}

CaseRegistration::CaseRegistration(const std::function<void()>& add_many, std::source_location where) {
  build_catalog();
  AtPlace at(where);
  add_many();
}

CaseRegistration::CaseRegistration(std::string_view id, Build build, std::source_location where) {
  auto& l = lazy();
  {
    std::lock_guard g(l.lock);
    if (!l.is_built) {
      l.pending.push_back({id, build, where});
      return;
    }
  }
  AtPlace at(where);  // after the catalog was built (a library loaded late): now
  build();
}

std::vector<std::string> CaseDef::instance_names() const {
  std::vector<std::string> out;
  for (const auto& r : roles) {
    if (r.count == 1) {
      out.push_back(r.name);
    } else {
      for (int i = 0; i < r.count; ++i) out.push_back(r.name + std::to_string(i));
    }
  }
  return out;
}

const RoleDef* CaseDef::role_for(const std::string& instance, int* index) const {
  for (const auto& r : roles) {
    if (r.count == 1 && r.name == instance) {
      if (index) *index = 0;
      return &r;
    }
    if (r.count > 1 && instance.rfind(r.name, 0) == 0) {
      const std::string tail = instance.substr(r.name.size());
      if (tail.empty() || !std::all_of(tail.begin(), tail.end(), ::isdigit)) continue;
      const int i = std::stoi(tail);
      if (i < r.count) {
        if (index) *index = i;
        return &r;
      }
    }
  }
  return nullptr;
}

Case::Case(std::string id, std::string description) {
  def.id = std::move(id);
  def.description = std::move(description);
}
Case& Case::clause(std::string id) {
  def.clauses.push_back(std::move(id));
  return *this;
}
Case& Case::clauses(std::initializer_list<std::string> ids) {
  for (const auto& id : ids) def.clauses.push_back(id);
  return *this;
}
Case& Case::role(std::string name, RoleBody body) {
  def.roles.push_back({std::move(name), 1, std::move(body)});
  return *this;
}
Case& Case::roles(std::string name, int count, RoleBody body) {
  def.roles.push_back({std::move(name), count, std::move(body)});
  return *this;
}
Case& Case::on_demand_roles(std::string name, int count, RoleBody body) {
  def.roles.push_back({std::move(name), count, std::move(body), false, true});
  return *this;
}
Case& Case::timeout(double seconds) {
  def.timeout_s = seconds;
  return *this;
}
Case& Case::allow_leak(std::string item) {
  def.allowed_leaks.push_back(std::move(item));
  return *this;
}
Case& Case::steps(const std::string& role, std::initializer_list<std::string> names) {
  for (const auto& n : names) def.steps.push_back(InjectPoint{role, n}.describe());
  return *this;
}
Case& Case::injection_role(std::string name, RoleBody body) {
  def.roles.push_back({std::move(name), 1, std::move(body), true});
  return *this;
}

std::optional<InjectPoint> InjectPoint::parse(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  return InjectPoint{text.substr(0, colon), text.substr(colon + 1)};
}
Case& Case::expendable(std::string role) {
  def.expendable.push_back(std::move(role));
  return *this;
}
Case& Case::hidden() {
  def.hidden = true;
  return *this;
}

Case& Case::param(std::string key, long max) {
  def.param_max[key] = max;
  def.params.push_back(std::move(key));
  return *this;
}

Case& Case::failpoint(std::string role, std::string spec) {
  (void)ipcref::failpoints::parse(spec);  // throws, naming the item and the fix
  def.failpoints[std::move(role)] = std::move(spec);
  return *this;
}
Case& Case::environment(std::string role, std::string key_value) {
  if (key_value.find('=') == std::string::npos || key_value.front() == '=')
    throw std::invalid_argument("Case::environment: '" + key_value + "' is not KEY=VALUE");
  def.role_env[std::move(role)].push_back(std::move(key_value));
  return *this;
}
Case& Case::all_devices() {
  def.all_devices = true;
  return *this;
}

Case& Case::events() {
  def.events = true;
  return *this;
}

Case& Case::fresh_process(std::string why) {
  def.fresh_process = why.empty() ? "it asks for fresh processes" : std::move(why);
  return *this;
}

Case& Case::needs(Precondition precondition) {
  def.preconditions.push_back(std::move(precondition));
  def.runtime_needs.push_back(false);
  return *this;
}

Case& Case::needs(RuntimeNeed need) {
  def.preconditions.push_back(std::move(need.check));
  def.runtime_needs.push_back(true);
  return *this;
}

std::optional<std::string> CaseDef::unmet(const std::string& adapter, const AdapterInfo& info, bool* by_runtime) const {
  for (std::size_t i = 0; i < preconditions.size(); ++i)
    if (auto why = preconditions[i](adapter, info)) {
      if (by_runtime) *by_runtime = i < runtime_needs.size() && runtime_needs[i];
      return why;
    }
  return std::nullopt;
}

bool CaseDef::uses_events() const {
  if (events) return true;
  for (std::size_t start = 0; start < id.size();) {
    if (id.compare(start, 5, "event") == 0) return true;
    const std::size_t dot = id.find('.', start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return false;
}

// ---- Role helpers shared by every role implementation

Evidence Evidence::of(const Outcome& o) {
  Evidence e(o.from_runtime() ? reports::Decider::runtime : reports::Decider::adapter);
  if (o.from_runtime()) {
    e.call = o.call;
    e.native = o.native;
    e.native_name = o.native_name;
  }
  return e;
}

namespace {
// Weaker is larger: runtime < adapter < harness < unknown.
int weakness(reports::Decider d) { return static_cast<int>(d); }
}  // namespace

Evidence& Evidence::with(const Evidence& e) {
  if (weakness(e.by) > weakness(by)) {
    by = e.by;
    call.clear();
    native = 0;
    native_name.clear();
  } else if (by == reports::Decider::runtime && call.empty()) {
    call = e.call;
  }
  return *this;
}

Evidence& Evidence::with(const Outcome& o) { return with(of(o)); }

bool Role::check_ok(const Outcome& o, std::string_view clause, const std::string& what, Where w) {
  if (!o.ok()) native_error(what, o);
  return check(o.ok(), Evidence::of(o), clause, o.ok() ? what + " succeeded" : what + " failed: " + o.describe(), w);
}

bool Role::check_error(const Outcome& o, Errc expected, std::string_view clause, const std::string& what, Where w) {
  if (!o.ok()) native_error(what, o);
  if (o.code == expected)
    return check(true, Evidence::of(o), clause, what + " gave " + errc_name(expected) + " as required", w);
  const std::string got = o.ok() ? std::string("success") : o.describe();
  return check(false, Evidence::of(o), clause, what + " gave " + got + ", expected " + errc_name(expected), w);
}

void Role::require(bool ok, std::string_view clause, const std::string& message, Where w) {
  if (!check(ok, clause, message, w)) throw RoleAbort{message};
}

void Role::require(bool ok, const Evidence& by, std::string_view clause, const std::string& message, Where w) {
  if (!check(ok, by, clause, message, w)) throw RoleAbort{message};
}

void Role::require_ok(const Outcome& o, std::string_view clause, const std::string& what, Where w) {
  if (!check_ok(o, clause, what, w)) throw RoleAbort{what + " failed"};
}

void Role::skip_if_unsupported(const Outcome& o, const std::string& what) {
  if (o.code == Errc::not_implemented || o.code == Errc::feature_not_supported)
    skip(what + ": " + o.describe(), o.from_runtime() ? "runtime" : "");
}

namespace {
// Mixes position and seed so that a shifted, stale or foreign buffer never matches.
inline std::uint64_t pattern_word(std::uint64_t word, std::uint64_t seed) noexcept {
  std::uint64_t x = word * 0x9e3779b97f4a7c15ull ^ (seed + 1) * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 29);
}
}  // namespace

namespace {
// Writes pattern bytes [offset, offset + bytes) to `out`: whole words at once where the host
// stores a word's bytes in the pattern's order (byte b of word w is bits 8b..8b+7), a byte at a
// time at the edges (and everywhere on a big-endian host).
void fill_pattern(std::byte* out, std::size_t bytes, std::uint64_t seed, std::size_t offset) noexcept {
  std::size_t i = 0;
  auto one_byte = [&] {
    const std::size_t pos = offset + i;
    out[i] = static_cast<std::byte>(pattern_word(pos >> 3, seed) >> (8 * (pos & 7)));
    ++i;
  };
  if constexpr (std::endian::native == std::endian::little) {
    while (i < bytes && ((offset + i) & 7) != 0) one_byte();
    for (; i + 8 <= bytes; i += 8) {
      const std::uint64_t v = pattern_word((offset + i) >> 3, seed);
      std::memcpy(out + i, &v, 8);
    }
  }
  while (i < bytes) one_byte();
}
}  // namespace

std::vector<std::byte> pattern(std::uint64_t seed, std::size_t bytes, std::size_t offset) {
  std::vector<std::byte> out(bytes);
  fill_pattern(out.data(), bytes, seed, offset);
  return out;
}

std::size_t first_mismatch(std::span<const std::byte> got, std::uint64_t seed, std::size_t offset) {
  // In chunks, so a 64 MiB check needs no 64 MiB pattern beside the data.
  constexpr std::size_t kChunk = 64 * 1024;
  std::vector<std::byte> want(std::min(kChunk, got.size()));
  for (std::size_t at = 0; at < got.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, got.size() - at);
    fill_pattern(want.data(), n, seed, offset + at);
    if (std::memcmp(got.data() + at, want.data(), n) == 0) continue;
    for (std::size_t i = 0; i < n; ++i)
      if (got[at + i] != want[i]) return at + i;
  }
  return static_cast<std::size_t>(-1);
}

}  // namespace ipcheck
