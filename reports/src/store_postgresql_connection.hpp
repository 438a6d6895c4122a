// The PostgreSQL store's connection (store_postgresql_connection.cpp): the connection string
// read by libpq's own parser before anything connects, and its secrets (the keywords libpq
// keeps secret, the values they have, and every message scrubbed of them); a session set up
// with timeouts (TCP keepalives, a TCP user timeout, a lock timeout); statements sent without
// blocking and waited for with a deadline, so that a server that stops answering never hangs
// the caller, and a failed one judged (connection lost, busy, privileges). The backend's own
// statements (schema, migrations, adds, reads) are in store_postgresql.cpp. Only with libpq.
#pragma once

#if IPCHECK_HAVE_LIBPQ

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ipcheck::reports::pg {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// One query parameter: text, or bytes sent as they are (bytea).
struct Param {
  std::string value;
  bool binary = false;
};

// A failed statement: what it was, and its SQLSTATE (empty when the connection is gone).
struct PgFailure {
  std::string state, message;
  bool connection_lost = false;
};

// One session with the server, for one store (`shown` names it in every message).
class Connection {
 public:
  explicit Connection(std::string shown) : shown_(std::move(shown)) {}
  ~Connection() { PQfinish(c_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects to the store at `uri` ("postgresql:" or "postgres:" alone: libpq's environment
  // and defaults) and sets the session up; throws StoreError when it cannot.
  void connect(const std::string& uri, double busy_timeout_s);

  // A message from the server or libpq, without any secret of the connection string (as
  // written and as decoded) or the password libpq used, should one appear in it.
  std::string scrub(std::string m) const;

  // Runs a statement; a failure comes back in `fail` (nullptr result) for the caller to judge.
  Result try_exec(const std::string& sql, const std::vector<Param>& params, PgFailure& fail, int result_format = 0);
  // A failure as the StoreError it is, saying what was being done.
  [[noreturn]] void failed(const PgFailure& f, const std::string& doing) const;
  // Runs a statement; a failure is thrown.
  Result exec(const std::string& sql, const std::vector<Param>& params = {}, const std::string& doing = "reading the store",
              int result_format = 0);
  void rollback();

 protected:
  std::string shown_;  // the store, as errors name it

 private:
  // Every result of the statement sent, as PQexec gives them: the first error, or the last
  // result. Each wait for the server is bounded by answer_limit_s_; past it the connection
  // is shut down (dead_), and every later call fails at once.
  Result wait_result();

  static constexpr double kAnswerMarginS = 30;
  double answer_limit_s_ = kAnswerMarginS + 30;
  bool dead_ = false;
  std::string dead_why_;
  PGconn* c_ = nullptr;
  std::vector<std::string> secrets_;
};

}  // namespace ipcheck::reports::pg

#endif
