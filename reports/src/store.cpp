// The store layer both backends share: a run's key and blob, the store's order and filters,
// first-bad, copy; the SQL is in store_sqlite.cpp and store_postgresql.cpp.
#include "ipcheck/reports/store.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <fnmatch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
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

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded, as libpq decodes a URI's user, password, keywords and values.
std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool is_secret_keyword(const std::string& k) {
  const auto& keys = conninfo_secret_keywords();
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

struct Redaction {
  std::string shown;
  std::vector<std::string> secrets;  // every text that must never show (raw and decoded)
  std::optional<std::string> uri_password;  // the URI's user:PASSWORD@, decoded, as written
};

void add_secret(Redaction& r, const std::string& s) {
  if (!s.empty() && std::find(r.secrets.begin(), r.secrets.end(), s) == r.secrets.end()) r.secrets.push_back(s);
}

// A URI: user:PASSWORD@ (up to the string's last '@': a password may hold '/', '?', '#' or
// '@', and over-redacting a host is better than showing a password) and every query
// parameter whose keyword, percent-decoded, is one libpq keeps secret (password,
// sslpassword).
Redaction redact_uri(const std::string& s, std::size_t after_scheme) {
  Redaction r;
  std::string out = s.substr(0, after_scheme);
  std::size_t rest = after_scheme;
  const std::size_t at = s.rfind('@');
  if (at != std::string::npos && at >= after_scheme) {
    const std::string info = s.substr(after_scheme, at - after_scheme);
    const std::size_t colon = info.find(':');
    if (colon != std::string::npos) {
      const std::string pass = info.substr(colon + 1);
      add_secret(r, pass);
      add_secret(r, percent_decoded(pass));
      r.uri_password = percent_decoded(pass);
      out += info.substr(0, colon + 1) + "***@";
    } else {
      out += info + "@";
    }
    rest = at + 1;
  }
  const std::size_t q = s.find('?', rest);
  out += s.substr(rest, q == std::string::npos ? std::string::npos : q - rest);
  if (q != std::string::npos) {
    out += '?';
    std::size_t from = q + 1;
    for (;;) {
      const std::size_t amp = s.find('&', from);
      const std::string param = s.substr(from, amp == std::string::npos ? std::string::npos : amp - from);
      const std::size_t eq = param.find('=');
      if (eq != std::string::npos && is_secret_keyword(percent_decoded(param.substr(0, eq)))) {
        add_secret(r, param.substr(eq + 1));
        add_secret(r, percent_decoded(param.substr(eq + 1)));
        out += param.substr(0, eq + 1) + "***";
      } else {
        out += param;
      }
      if (amp == std::string::npos) break;
      out += '&';
      from = amp + 1;
    }
  }
  r.shown = out;
  return r;
}

// Keyword form (host=... password='a b'): each value, bare or single-quoted with backslash
// escapes, as libpq reads it; a secret keyword's value replaced by ***.
Redaction redact_keywords(const std::string& s) {
  Redaction r;
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      out += s[i++];
      continue;
    }
    const std::size_t k0 = i;
    while (i < s.size() && s[i] != '=' && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::string key = s.substr(k0, i - k0);
    out += key;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) out += s[i++];
    if (i >= s.size() || s[i] != '=') continue;
    out += s[i++];
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) out += s[i++];
    const std::size_t v0 = i;
    std::string value;
    if (i < s.size() && s[i] == '\'') {
      for (++i; i < s.size() && s[i] != '\''; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        value += s[i];
      }
      if (i < s.size()) ++i;
    } else {
      for (; i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        value += s[i];
      }
    }
    if (is_secret_keyword(key)) {
      add_secret(r, s.substr(v0, i - v0));
      add_secret(r, value);
      out += "***";
    } else {
      out += s.substr(v0, i - v0);
    }
  }
  r.shown = out;
  return r;
}

Redaction redaction_of(const std::string& s) {
  Redaction r;
  std::size_t scheme = std::string::npos;
  if (s.rfind("postgresql://", 0) == 0) scheme = 13;
  if (s.rfind("postgres://", 0) == 0) scheme = 11;
  if (scheme != std::string::npos) {
    r = redact_uri(s, scheme);
  } else if (s.find('=') != std::string::npos) {
    r = redact_keywords(s);
  } else {
    r.shown = s;
  }
  // What libpq itself reads as a secret, wherever it is written (a form the above missed);
  // one inside a secret already hidden (libpq ends a password at its first '@') is hidden.
  for (const auto& v : conninfo_secrets_by_libpq(s)) {
    const bool covered = std::any_of(r.secrets.begin(), r.secrets.end(),
                                     [&](const std::string& k) { return k.find(v) != std::string::npos; });
    if (!covered) add_secret(r, v);
  }
  r.shown = scrubbed(r.shown, r.secrets);
  return r;
}

}  // namespace

std::string scrubbed(std::string m, const std::vector<std::string>& secrets) {
  std::vector<std::string> by_length = secrets;
  std::sort(by_length.begin(), by_length.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& v : by_length) {
    if (v.empty() || v == "***") continue;
    for (std::size_t i = 0; (i = m.find(v, i)) != std::string::npos; i += 3) m.replace(i, v.size(), "***");
  }
  return m;
}

std::string redact_conninfo(const std::string& s) { return redaction_of(s).shown; }

std::vector<std::string> conninfo_secret_texts(const std::string& s) {
  return redaction_of(s).secrets;
}

std::optional<std::string> conninfo_uri_password(const std::string& s) { return redaction_of(s).uri_password; }

std::string redact_store_name(const std::string& db) {
  if (!is_postgresql_store(db)) return db;
  return redact_conninfo(db);
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

namespace {

// A run's columns as they follow from its results and their canonical text (what add
// writes, what copy checks a source store's columns against).
StoredRun columns_of(const Results& r, const std::string& text) {
  StoredRun c;
  c.digest = sha256::hex(text);
  c.adapter = r.run.adapter;
  c.driver_name = r.run.driver_name;
  c.driver_version = r.run.driver_version;
  c.gpu = gpu_of(r.run);
  c.hostname = r.run.hostname;
  c.kernel = r.run.kernel;
  c.ipcheck_version = r.run.ipcheck_version;
  c.start = r.run.start;
  c.duration_s = r.run.duration_s;
  c.total = r.summary.total;
  c.unexpected = r.summary.unexpected;
  c.json_bytes = static_cast<long long>(text.size());
  return c;
}

// The first column of `told` that its results do not bear out, or "" (label, id, added_at
// and stored_bytes are the store's own, not the run's).
std::string column_mismatch(const StoredRun& told, const StoredRun& real) {
  const auto field = [](const char* name, const std::string& a, const std::string& b) {
    return a == b ? std::string() : std::string(name) + " is '" + escape_invalid_utf8(a) + "', the results say '" +
                                        escape_invalid_utf8(b) + "'";
  };
  for (const auto& m :
       {field("digest", told.digest, real.digest), field("adapter", told.adapter, real.adapter),
        field("driver_name", told.driver_name, real.driver_name),
        field("driver_version", told.driver_version, real.driver_version), field("gpu", told.gpu, real.gpu),
        field("hostname", told.hostname, real.hostname), field("kernel", told.kernel, real.kernel),
        field("ipcheck_version", told.ipcheck_version, real.ipcheck_version), field("start", told.start, real.start),
        field("total", std::to_string(told.total), std::to_string(real.total)),
        field("unexpected", std::to_string(told.unexpected), std::to_string(real.unexpected)),
        field("results_size", std::to_string(told.json_bytes), std::to_string(real.json_bytes))})
    if (!m.empty()) return m;
  if (told.duration_s != real.duration_s)
    return "duration_s is " + std::to_string(told.duration_s) + ", the results say " + std::to_string(real.duration_s);
  return "";
}

}  // namespace

Store::Added Store::add(const Results& r, const std::string& label) {
  const std::string text = dump_json(to_json(r));
  RunRecord rec;
  StoredRun& c = rec.run;
  c = columns_of(r, text);
  if (seeded::is("store_digest_names_file")) c.digest = sha256::hex(text + label);  // defects:seeded twin
  c.label = label;
  c.added_at = iso_now();
  rec.blob = compress(text);
  rec.cases = case_records(r);
  rec.written_by = c.ipcheck_version.empty() ? std::string("?") : c.ipcheck_version;
  const auto [id, fresh] = b_->add(rec);
  if (!fresh) {
    // "Already stored" only for a run whose stored results are this run, byte for byte: a
    // store whose digest column was edited (or copied from an edited store) keeps another run
    // under this run's key.
    const auto b = b_->blob(id);
    const std::string where = path_ + ": run " + std::to_string(id);
    if (!b) throw StoreError(where + ": gone while this run was being added; add it again");
    if (b->encoding != "zlib" || b->size != c.json_bytes || decompress(b->blob, b->size, where) != text)
      throw StoreError(where + " has this run's digest " + c.digest.substr(0, 12) +
                       " but other results (the store was edited or is damaged): this run is not stored; "
                       "'ipcheck store copy' into a new store refuses such runs, naming them");
  }
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
// same key, whichever backends the two stores are. The source is not trusted: each run's
// digest and columns are computed again from its stored results, and a run they do not bear
// out is refused, naming it and the column (nothing of it is copied).
CopyCount copy_runs(const Store& from, Store& to) {
  CopyCount n;
  for (const auto& r : from.runs()) {
    const std::string where = from.path() + ": run " + std::to_string(r.id);
    const auto b = from.b_->blob(r.id);
    if (!b) throw StoreError(where + ": gone while it was being copied");
    const Results res = results_from_blob(b->blob, b->encoding, b->size, where);
    const std::string text = decompress(b->blob, b->size, where);
    if (const std::string m = column_mismatch(r, columns_of(res, text)); !m.empty())
      throw StoreError(where + ": " + m + " (the store was edited or is damaged); not copied: copy from a store "
                       "whose runs match their results, or add the run's results.json again");
    RunRecord rec;
    rec.run = r;  // the columns as `from` keeps them (checked above)
    rec.run.json_bytes = b->size;
    rec.blob = b->blob;
    rec.cases = case_records(res);
    rec.written_by = r.ipcheck_version.empty() ? std::string("?") : r.ipcheck_version;
    const auto [id, fresh] = to.b_->add(rec);
    if (!fresh) {
      const auto there = to.b_->blob(id);
      if (!there || decompress(there->blob, there->size, to.path() + ": run " + std::to_string(id)) != text)
        throw StoreError(to.path() + ": run " + std::to_string(id) + " has the digest of " + where +
                         " but other results (the store was edited or is damaged); not copied");
    }
    ++(fresh ? n.copied : n.already);
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
