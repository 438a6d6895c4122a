// Expectations files: the known deviations of one adapter, each with its reason and link.
//
//   # a comment
//   <case or clause glob>  <status>  [key=value ...]  <reason, with a link>
//
//   @block cuda-event-pool           one reason and link for many lines (optional name)
//   @reason CUDA keeps the exporter's event pool mapped after cuEventDestroy
//   @basis CUDA Driver API reference, cuEventDestroy: "..."   the normative text the
//                                    deviation departs from, quoted with its section; one
//                                    that starts "ipcheck robustness profile" makes the
//                                    block a hardening request (explain() says so), never
//                                    a violation of an API
//   @link https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html
//   @driver >=580 <590               only for these driver versions (optional)
//   event.open.size      leak  leak=*/dev/shm/cuda.shm.*
//   event.roundtrip      leak  leak=*/dev/shm/cuda.shm.*
//   @end
//
// Status: fail, leak, timeout or crash (what the deviation makes the case), or flaky (below).
// What must match besides the status (globs; all given must match):
//   check=   the message of a failed check        clause=  the clause of a failed check
//   native=  the native code name of a failed check (CUDA_ERROR_INVALID_VALUE)
//   role=    the role of a failed check, a crashed role or a leak
//   leak=    the item of each leak finding          signal=  the signal of a crash (SIGSEGV)
//   reason=  the case's one-line reason (a crash's last output line, a timeout's wait)
//   driver=  a driver version range (">=580.0 <600"), as @driver for one line; a leading
//            word names the product the version starts with ("Mesa", "Mesa >=25")
// A line covers failures, not cases: a case is xfail only when every failed check, every
// leak, or its crash or timeout is covered; a new, different failure keeps its status.
// A line that matched nothing while a case it names ran is reported as stale.
//
// `flaky` names a known flake: a case that did not pass and then passed on a rerun
// (ipcheck run --rerun-failures N) stays `flaky` and is marked expected (its expectation and
// expected_status say so); it never becomes xfail or pass. A flaky line covers no failure:
// a case that fails on every attempt keeps its status. It takes only reason= (matched against
// the first failing attempt's reason) and driver=, and is never stale (a flake passes on
// most runs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck {

struct ExpectationMatch {
  std::string check, clause, native, role, leak, signal, reason;
  bool empty() const {
    return check.empty() && clause.empty() && native.empty() && role.empty() && leak.empty() && signal.empty() &&
           reason.empty();
  }
  std::string describe() const;  // "check=... leak=..." (empty when nothing beyond the status)
};

struct Expectation {
  std::string pattern;  // case or clause id, globs allowed
  reports::Status status = reports::Status::fail;
  ExpectationMatch match;
  std::string reason;
  std::string link;
  std::string basis;    // its block's @basis: the quoted normative text, or ipcheck's profile
  std::string driver;   // version range, empty: every version
  std::string block;    // name of the @block it is in, if any
  std::string where;    // file:line
  // True when the basis is ipcheck's robustness profile alone: a hardening request.
  bool hardening() const;
  // "<reason> [basis: <basis>] (<link>)", as shown in a report; a profile basis reads
  // "[a hardening request, not a violation; basis: ...]".
  std::string explain() const;
};

class Expectations {
 public:
  // Throws std::runtime_error naming the file, line and problem.
  static Expectations load(const std::string& path);
  static Expectations parse(const std::string& text, const std::string& where);

  const std::vector<Expectation>& entries() const noexcept { return entries_; }
  std::string path;
  // Lines whose bytes were not UTF-8 ("x.txt:3: ..."): they are read with each bad byte as
  // \xNN (so a Latin-1 file still works and its text can be written into results), never an
  // error. The command line prints them as warnings.
  std::vector<std::string> warnings;

 private:
  std::vector<Expectation> entries_;
};

bool glob_match(const std::string& pattern, const std::string& text);

// Whether `version` lies in `range`: space-separated bounds (">=580", "<590.1", "=580.159.04",
// "580.159.04"); dotted numbers compare part by part as numbers. An empty range holds all. A
// leading word is a product the version must start with ("Mesa >=22" holds "Mesa 22.3.6 (LLVM
// 15.0.6)", lavapipe's, and not NVIDIA's "580.159.04"); the bounds after it compare the rest.
bool version_in_range(const std::string& version, const std::string& range);
// Throws std::invalid_argument naming the bound when `range` is malformed.
void check_version_range(const std::string& range);

}  // namespace ipcheck
