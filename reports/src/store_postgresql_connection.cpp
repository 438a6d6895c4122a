// The PostgreSQL store's connection (store_postgresql_connection.hpp says what it does):
// libpq's reading of connection strings and their secrets, the session and its timeouts,
// statements under a deadline and their failures. Without libpq at configure time, only the
// fixed list of secret keywords is here.
#include "store_backend.hpp"

#if IPCHECK_HAVE_LIBPQ

#include "store_postgresql_connection.hpp"

#include "ipcheck/reports/files.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace ipcheck::reports {

const std::vector<std::string>& conninfo_secret_keywords() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    char* err = nullptr;
    PQconninfoOption* o = PQconninfoParse("", &err);  // every keyword, with its display flag
    for (const PQconninfoOption* p = o; p && p->keyword; ++p)
      if (p->dispchar && std::strchr(p->dispchar, '*')) out.push_back(p->keyword);
    PQconninfoFree(o);
    PQfreemem(err);
    for (const char* k : {"password", "sslpassword"})
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  }();
  return keys;
}

std::vector<std::string> conninfo_secrets_by_libpq(const std::string& conninfo) {
  std::vector<std::string> out;
  char* err = nullptr;
  PQconninfoOption* o = PQconninfoParse(conninfo.c_str(), &err);
  PQfreemem(err);
  const auto& keys = conninfo_secret_keywords();
  for (const PQconninfoOption* p = o; p && p->keyword; ++p)
    if (p->val && *p->val && std::find(keys.begin(), keys.end(), p->keyword) != keys.end()) out.push_back(p->val);
  PQconninfoFree(o);
  return out;
}

namespace pg {

namespace {

std::string trimmed(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += c == '\n' ? "; " : " ";
    } else {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

// Text as PostgreSQL can hold it: a TEXT value is UTF-8 without NUL (and libpq passes text
// parameters as C strings), while a run's fields and a label (a path) may hold either. Such
// bytes are written as \xNN, as everywhere else in ipcheck (escape_invalid_utf8); the run
// itself is kept whole, byte for byte, in the BYTEA blob.
std::string pg_text(const std::string& s) {
  std::string t = escape_invalid_utf8(s);
  for (std::size_t i = 0; (i = t.find('\0', i)) != std::string::npos; i += 4) t.replace(i, 1, "\\x00");
  return t;
}

void quiet(void*, const char*) {}

}  // namespace

void Connection::connect(const std::string& uri, double busy_timeout_s) {
  const std::string& shown = shown_;
  const bool from_env = uri == "postgresql:" || uri == "postgres:";
  // The string as libpq's own parser reads it, before any connection: a URI it cannot read is
  // refused (its message scrubbed: a parser may quote the URI whole), and so is one whose
  // password libpq would read other than as written (a '/' or '@' in it ends it early, and the
  // rest would be taken for a host and shown in its errors).
  std::vector<std::string> secrets = conninfo_secret_texts(uri);
  if (!from_env) {
    secrets.push_back(uri);
    char* err = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(uri.c_str(), &err);
    if (!parsed) {
      std::string why = err ? err : "out of memory";
      PQfreemem(err);
      throw StoreError(shown + ": not a PostgreSQL URI libpq can read (" + trimmed(scrubbed(why, secrets)) +
                       "); check it, percent-encoding reserved characters in its values (e.g. / as %2F)");
    }
    std::string libpq_password;
    for (const PQconninfoOption* p = parsed; p->keyword; ++p)
      if (std::strcmp(p->keyword, "password") == 0 && p->val) libpq_password = p->val;
    PQconninfoFree(parsed);
    if (const auto written = conninfo_uri_password(uri); written && *written != libpq_password)
      throw StoreError(shown + ": libpq does not read the URI's password as written (a '/' or '@' in it ends it "
                               "early); percent-encode those characters in the password (/ as %2F, @ as %40)");
  }
  // Defaults first: the URI's own parameters (later in the list) override them.
  // TCP keepalives and a TCP user timeout (ignored on a Unix socket) notice a host that is
  // gone; the client-side deadline of every statement (Connection::wait_result) covers the rest.
  const char* keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
                        "tcp_user_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "1", "10", "5", "3", "30000", "ipcheck", from_env ? nullptr : uri.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 1);
  if (!c) throw StoreError(shown + ": cannot connect to the PostgreSQL store (out of memory)");
  c_ = c;
  secrets_ = std::move(secrets);
  if (PQstatus(c) != CONNECTION_OK)
    throw StoreError(shown + ": cannot connect to the PostgreSQL store: " + scrub(PQerrorMessage(c)) +
                     "; check the URI (or PGHOST, PGDATABASE, PGUSER; a password in ~/.pgpass or PGPASSWORD), "
                     "that the server runs and that it lets this user in");
  PQsetNoticeProcessor(c, quiet, nullptr);
  answer_limit_s_ = std::clamp(busy_timeout_s, 0.0, 86400.0) + kAnswerMarginS;
  if (PQsetnonblocking(c, 1) != 0)
    throw StoreError(shown + ": cannot set up the connection (" + scrub(PQerrorMessage(c)) + ")");
  const long long ms = static_cast<long long>(std::clamp(busy_timeout_s, 0.0, 86400.0) * 1000);
  // lock_timeout 0 would mean "wait forever": the shortest wait is 1 ms.
  exec("SET lock_timeout = " + std::to_string(std::max(1LL, ms)), {}, "setting up the session");
}

std::string Connection::scrub(std::string m) const {
  std::vector<std::string> secrets = secrets_;
  if (const char* pass = PQpass(c_); pass && *pass) secrets.push_back(pass);
  return trimmed(scrubbed(std::move(m), secrets));
}

Result Connection::try_exec(const std::string& sql, const std::vector<Param>& params, PgFailure& fail,
                            int result_format) {
  std::vector<std::string> texts;
  texts.reserve(params.size());
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const auto& p : params) {
    texts.push_back(p.binary ? std::string() : pg_text(p.value));
    const std::string& v = p.binary ? p.value : texts.back();
    values.push_back(v.c_str());
    lengths.push_back(static_cast<int>(v.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  // Sent without blocking and waited for with a deadline: a server that stops answering
  // (stopped, its host gone, a network that drops packets) never hangs the caller.
  if (dead_) {
    fail = {"", dead_why_, true};
    return nullptr;
  }
  const int sent = params.empty() && result_format == 0
                       ? PQsendQuery(c_, sql.c_str())
                       : PQsendQueryParams(c_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                                           lengths.data(), formats.data(), result_format);
  Result r = sent ? wait_result() : nullptr;
  if (dead_) {
    fail = {"", dead_why_, true};
    return nullptr;
  }
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
  fail.state = state ? state : "";
  // No SQLSTATE: libpq's own error (the socket closed, the server gone); class 08 and
  // 57P01-57P03: the server ended the session (shutdown, crash, restarting).
  fail.connection_lost = PQstatus(c_) != CONNECTION_OK || fail.state.empty() || fail.state.rfind("08", 0) == 0 ||
                         fail.state == "57P01" || fail.state == "57P02" || fail.state == "57P03";
  // The server's message, its detail and hint, without "ERROR:" and the statement quoted
  // back with a caret; libpq's own message when the server said nothing.
  const char* primary = r ? PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  if (primary) {
    std::string m = primary;
    if (const char* d = PQresultErrorField(r.get(), PG_DIAG_MESSAGE_DETAIL)) m += std::string("; ") + d;
    if (const char* h = PQresultErrorField(r.get(), PG_DIAG_MESSAGE_HINT)) m += std::string("; ") + h;
    fail.message = scrub(m);
  } else {
    fail.message = scrub(r && *PQresultErrorMessage(r.get()) ? PQresultErrorMessage(r.get()) : PQerrorMessage(c_));
  }
  return nullptr;
}

Result Connection::wait_result() {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(answer_limit_s_);
  // One wait for the socket: false once the deadline passed (the connection then shut).
  const auto wait_for = [&](short events) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      if (left <= 0) break;
      pollfd p{PQsocket(c_), events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return true;  // PQconsumeInput or PQflush says what it is
    }
    char why[200];
    std::snprintf(why, sizeof why,
                  "the server did not answer within %.0f s (the busy timeout and %.0f s more); the connection was "
                  "closed",
                  answer_limit_s_, kAnswerMarginS);
    dead_ = true;
    dead_why_ = why;
    ::shutdown(PQsocket(c_), SHUT_RDWR);
    return false;
  };
  // The statement out (the connection is non-blocking: a server that stops reading never
  // blocks a write), then its results in.
  for (int f; (f = PQflush(c_)) == 1;) {
    if (!wait_for(POLLIN | POLLOUT)) return nullptr;
    if (!PQconsumeInput(c_)) break;
  }
  Result kept;
  for (;;) {
    while (PQisBusy(c_)) {
      if (!wait_for(POLLIN)) return nullptr;
      if (!PQconsumeInput(c_)) break;  // the connection failed: PQgetResult says so
    }
    PGresult* next = PQgetResult(c_);
    if (!next) break;
    const ExecStatusType st = PQresultStatus(next);
    const bool error = st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY;
    const bool kept_error = kept && PQresultStatus(kept.get()) != PGRES_COMMAND_OK &&
                            PQresultStatus(kept.get()) != PGRES_TUPLES_OK;
    if (kept_error && !error) {
      PQclear(next);
    } else if (!kept_error) {
      kept.reset(next);
    } else {
      PQclear(next);
    }
  }
  return kept;
}

[[noreturn]] void Connection::failed(const PgFailure& f, const std::string& doing) const {
  if (f.connection_lost)
    throw StoreError(shown_ + ": lost the connection to the PostgreSQL server while " + doing + " (" + f.message +
                     "); check that the server runs, then try again");
  if (f.state == "55P03")
    throw StoreError(shown_ + ": the store is busy: another session held a lock for longer than the busy timeout; "
                              "try again, or wait longer with --busy-timeout S");
  std::string hint;
  if (f.state == "42501")
    hint = "; the role needs the privileges of the store's schema (creating it: CREATE on the schema, which "
           "PostgreSQL 15 gives only to the database's owner in 'public': GRANT CREATE ON SCHEMA public TO the "
           "role, or give it a database of its own: CREATE DATABASE ipcheck OWNER role)";
  throw StoreError(shown_ + ": " + doing + ": " + f.message + (f.state.empty() ? "" : " (SQLSTATE " + f.state + ")") +
                   hint);
}

Result Connection::exec(const std::string& sql, const std::vector<Param>& params, const std::string& doing,
                        int result_format) {
  PgFailure f;
  Result r = try_exec(sql, params, f, result_format);
  if (!r) failed(f, doing);
  return r;
}

void Connection::rollback() {
  PgFailure ignored;
  if (!dead_ && PQstatus(c_) == CONNECTION_OK) try_exec("ROLLBACK", {}, ignored);
}

}  // namespace pg

}  // namespace ipcheck::reports

#else  // no libpq

namespace ipcheck::reports {

const std::vector<std::string>& conninfo_secret_keywords() {
  static const std::vector<std::string> keys{"password", "sslpassword"};
  return keys;
}

std::vector<std::string> conninfo_secrets_by_libpq(const std::string&) { return {}; }

}  // namespace ipcheck::reports

#endif
