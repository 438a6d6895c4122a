// The store layer both backends share: a run's key and blob, the store's order and filters,
// first-bad, copy; the SQL is in store_sqlite.cpp and store_postgresql.cpp.
#include "ipcheck/reports/store.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <fnmatch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>

#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/version.hpp"
#include "sha256.hpp"
#include "store_backend.hpp"

namespace ipcheck::reports {

using nlohmann::json;

std::string content_digest(const Results& r) { return sha256::hex(dump_json(to_json(r))); }

std::string gpu_of(const RunInfo& run) {
  std::vector<std::string> names;
  for (const auto& d : run.devices) {
    const std::string n = d.is_object() ? d.value("name", "") : "";
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool is_postgresql_store(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0 || db == "postgresql:" ||
         db == "postgres:";
}

std::string redact_store_name(const std::string& db) {
  if (!is_postgresql_store(db)) return db;
  std::string s = db;
  // user:PASSWORD@ in the authority (up to the first '/', '?' or '#' after "://").
  const auto scheme = s.find("://");
  if (scheme != std::string::npos) {
    const std::size_t from = scheme + 3;
    const std::size_t end = std::min(s.find_first_of("/?#", from), s.size());
    const std::size_t at = s.rfind('@', end == 0 ? 0 : end - 1);
    if (at != std::string::npos && at >= from) {
      const std::size_t colon = s.find(':', from);
      if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... among the parameters.
  for (std::size_t q = s.find_first_of("?&"); q != std::string::npos; q = s.find('&', q + 1)) {
    if (s.compare(q + 1, 9, "password=") != 0) continue;
    const std::size_t v = q + 10;
    const std::size_t e = std::min(s.find('&', v), s.size());
    s.replace(v, e - v, "***");
  }
  return s;
}

namespace {

std::string iso_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string compress(const std::string& in) {
  uLongf size = compressBound(static_cast<uLong>(in.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(in.data()),
                static_cast<uLong>(in.size()), 9) != Z_OK)
    throw StoreError("zlib could not compress a run's results");
  out.resize(size);
  return out;
}

std::string decompress(const std::string& in, long long size, const std::string& where) {
  // The size comes from the store: bounded before it sizes an allocation.
  if (size < 0 || static_cast<unsigned long long>(size) > kMaxResultsBytes)
    throw StoreError(where + ": field results_size is " + std::to_string(size) + ", not a size from 0 to " +
                     std::to_string(kMaxResultsBytes) + " bytes (the store is damaged)");
  std::string out(static_cast<std::size_t>(size), '\0');
  uLongf got = static_cast<uLongf>(size);
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &got, reinterpret_cast<const Bytef*>(in.data()),
                 static_cast<uLong>(in.size())) != Z_OK ||
      got != static_cast<uLongf>(size))
    throw StoreError(where + ": the stored results do not decompress (the store is damaged)");
  return out;
}

}  // namespace

std::vector<RunRecord::Case> case_records(const Results& r) {
  std::vector<RunRecord::Case> out;
  out.reserve(r.cases.size());
  for (const auto& c : r.cases)
    out.push_back({c.id, std::string(to_string(c.status)), c.reason,
                   c.expected_status ? std::string(to_string(*c.expected_status)) : std::string(),
                   static_cast<long long>(std::max<std::size_t>(1, c.attempts.size()))});
  return out;
}

void pause_before_commit_for_tests() {
  const char* file = std::getenv("IPCHECK_STORE_TEST_PAUSE_BEFORE_COMMIT");
  if (!file || !*file) return;
  std::ofstream(file) << ::getpid() << "\n";
  for (int i = 0; i < 2400 && ::access(file, F_OK) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

Results results_from_blob(const std::string& blob, const std::string& encoding, long long size,
                          const std::string& where) {
  if (encoding != "zlib")
    throw StoreError(where + ": field results_encoding is '" + escape_invalid_utf8(encoding) +
                     "', not zlib (the store is damaged, or newer than this ipcheck)");
  const std::string text = decompress(blob, size, where);
  try {
    return from_json(parse_json_text(text, where, "stored run"));
  } catch (const std::exception& e) {
    throw StoreError(where + ": " + e.what());
  }
}

Store::Store(std::unique_ptr<StoreBackend> b, std::string path) : b_(std::move(b)), path_(std::move(path)) {}
Store::Store(Store&& other) noexcept = default;
Store::~Store() = default;

int Store::schema_version() const { return b_->schema_version(); }
const char* Store::backend() const { return b_->name(); }

Store Store::open(const std::string& path, bool create, double busy_timeout_s) {
  return open(path, create, kStoreSchemaVersion, busy_timeout_s);
}

Store Store::open(const std::string& path, bool create, int target, double busy_timeout_s) {
  if (is_postgresql_store(path)) {
    const std::string shown = redact_store_name(path) + (path.find("://") == std::string::npos ? " (the PG* environment variables)" : "");
    return Store(open_postgresql_store(path, shown, create, target, busy_timeout_s), shown);
  }
  return Store(open_sqlite_store(path, create, target, busy_timeout_s), path);
}

Store::Added Store::add(const Results& r, const std::string& label) {
  const std::string text = dump_json(to_json(r));
  RunRecord rec;
  StoredRun& c = rec.run;
  c.digest = sha256::hex(seeded::is("store_digest_names_file") ? text + label : text);
  c.label = label;
  c.adapter = r.run.adapter;
  c.driver_name = r.run.driver_name;
  c.driver_version = r.run.driver_version;
  c.gpu = gpu_of(r.run);
  c.hostname = r.run.hostname;
  c.kernel = r.run.kernel;
  c.ipcheck_version = r.run.ipcheck_version;
  c.start = r.run.start;
  c.added_at = iso_now();
  c.duration_s = r.run.duration_s;
  c.total = r.summary.total;
  c.unexpected = r.summary.unexpected;
  c.json_bytes = static_cast<long long>(text.size());
  rec.blob = compress(text);
  rec.cases = case_records(r);
  rec.written_by = c.ipcheck_version.empty() ? std::string("?") : c.ipcheck_version;
  const auto [id, fresh] = b_->add(rec);
  return Added{id, fresh, c.digest};
}

std::vector<StoredRun> Store::runs(const RunFilter& f) const {
  std::vector<StoredRun> out;
  for (auto& r : b_->runs()) {
    if (!f.adapter.empty() && r.adapter != f.adapter) continue;
    if (!f.gpu.empty() && ::fnmatch(f.gpu.c_str(), r.gpu.c_str(), 0) != 0 &&
        ::fnmatch(("*" + f.gpu + "*").c_str(), r.gpu.c_str(), 0) != 0)
      continue;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const StoredRun& a, const StoredRun& b) {
    if (a.adapter != b.adapter) return a.adapter < b.adapter;
    if (a.driver_name != b.driver_name) return a.driver_name < b.driver_name;
    if (const int c = compare_versions(a.driver_version, b.driver_version)) return c < 0;
    return std::tie(a.start, a.id) < std::tie(b.start, b.id);
  });
  if (f.last > 0 && out.size() > static_cast<std::size_t>(f.last))
    out.erase(out.begin(), out.end() - f.last);
  return out;
}

Results Store::load(long long id) const {
  const auto b = b_->blob(id);
  if (!b) throw StoreError(path_ + ": no run " + std::to_string(id) + " in the store ('ipcheck store ls' lists them)");
  return results_from_blob(b->blob, b->encoding, b->size, path_ + ": run " + std::to_string(id));
}

std::vector<Store::CaseRow> Store::case_rows(const std::string& case_id) const {
  std::vector<CaseRow> out;
  for (const auto& raw : b_->case_rows(case_id)) {
    CaseRow r;
    r.run = raw.run;
    const auto st = parse_status(raw.status);
    if (!st) throw StoreError(path_ + ": case " + case_id + " has unknown status '" + raw.status + "'");
    r.status = *st;
    r.reason = raw.reason;
    r.attempts = static_cast<int>(raw.attempts);
    out.push_back(std::move(r));
  }
  return out;
}

// Byte for byte: the run's blob, digest and columns as `from` keeps them (its case rows made
// again from the blob, which is read and checked first), so a copy is the same run under the
// same key, whichever backends the two stores are.
CopyCount copy_runs(const Store& from, Store& to) {
  CopyCount n;
  for (const auto& r : from.runs()) {
    const std::string where = from.path() + ": run " + std::to_string(r.id);
    const auto b = from.b_->blob(r.id);
    if (!b) throw StoreError(where + ": gone while it was being copied");
    const Results res = results_from_blob(b->blob, b->encoding, b->size, where);
    RunRecord rec;
    rec.run = r;  // the columns as `from` keeps them
    rec.run.json_bytes = b->size;
    rec.blob = b->blob;
    rec.cases = case_records(res);
    rec.written_by = r.ipcheck_version.empty() ? std::string("?") : r.ipcheck_version;
    ++(to.b_->add(rec).second ? n.copied : n.already);
  }
  return n;
}

FirstBad find_first_bad(const std::vector<StoredRun>& runs, const std::vector<Store::CaseRow>& rows) {
  std::map<long long, const Store::CaseRow*> by_run;
  for (const auto& r : rows) by_run[r.run] = &r;
  FirstBad out;
  for (const auto& run : runs) {
    const auto it = by_run.find(run.id);
    if (it == by_run.end()) continue;  // the case was not in that run
    const Store::CaseRow& row = *it->second;
    if (out.versions.empty() || compare_versions(out.versions.back().version, run.driver_version) != 0)
      out.versions.push_back({run.driver_version, std::nullopt, "", {}, {}});
    VersionVerdict& v = out.versions.back();
    v.runs.push_back(run.label);
    if (!is_judged(row.status)) {
      if (std::find(v.unjudged.begin(), v.unjudged.end(), row.status) == v.unjudged.end()) v.unjudged.push_back(row.status);
    } else if (!v.status || severity(row.status) > severity(*v.status)) {
      v.status = row.status;
      v.reason = row.reason;
    }
  }
  std::optional<std::size_t> previous;
  for (std::size_t i = 0; i < out.versions.size(); ++i) {
    if (!out.versions[i].status) continue;
    if (previous && severity(*out.versions[i].status) > severity(*out.versions[*previous].status)) {
      out.first_bad = i;
      out.last_good = previous;
      break;
    }
    previous = i;
  }
  return out;
}

}  // namespace ipcheck::reports
