// Role processes kept for another case (--reuse-roles, docs/gpus.md "Parallel runs on GPUs"):
// a role whose case passed, that ended its body cleanly and left nothing open, waits for
// the next case's start document instead of exiting, its adapter initialised (a GPU context
// made once, not once per case). The runner keeps such idle roles by what makes two of them
// interchangeable (role_pool_key) and hands one to the next case that may reuse one
// (fresh_process_reason). Private to harness/src.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ipcheck/case.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"

namespace ipcheck::runner_detail {

// Why `def`'s roles start in fresh processes even where the run reuses roles; "" when they
// may be served by a kept role. Conservative: a case that declares it (Case::fresh_process),
// a run that injects a fault, failpoints or environment of its own for a role, a role that
// may die (expendable), on-demand roles, and every robustness case (garbage,
// forged, revoked and stale handles, crashes, pid reuse, driver faults: what may leave a
// runtime or its context changed for whatever comes next).
std::string fresh_process_reason(const CaseDef& def, const InjectPoint* inject);

// Why a whole run starts every role fresh although reuse was asked for; "" when it may reuse:
// a seeded defect (IPCREF_DEFECT, IPCHECK_ZE_DEFECT, in the runner's environment or the
// roles') may leave a runtime's state corrupt for the next case.
std::string run_reuse_blocked(const RunOptions& o);

// What makes two idle roles interchangeable: the role program, the adapter and its options,
// the transport, the audit method, the roles' whole environment (the device mask of a placed
// case among it), the device the case was placed on, and whether its adapter was started with
// the event verbs. Two roles of the same key started the same way and differ only in their pid.
std::string role_pool_key(const RunOptions& o, const std::string& executable, const std::vector<std::string>& env,
                          int device, bool events);

// Idle items by key, taken first in, first out; `usable` drops one that can no longer serve
// (a role process that died while idle). At most `per_key` are kept per key.
template <class T>
class KeyedPool {
 public:
  explicit KeyedPool(std::size_t per_key, std::function<bool(T&)> usable = {})
      : per_key_(per_key), usable_(std::move(usable)) {}

  std::optional<T> take(const std::string& key) {
    std::lock_guard g(lock_);
    auto it = idle_.find(key);
    while (it != idle_.end() && !it->second.empty()) {
      T t = std::move(it->second.front());
      it->second.pop_front();
      if (!usable_ || usable_(t)) {
        ++reused_;
        return t;
      }
      ++dropped_;
    }
    return std::nullopt;
  }
  // Keeps `t` for the next case of `key`; gives it back when the pool has enough of that key.
  std::optional<T> give(const std::string& key, T t) {
    std::lock_guard g(lock_);
    auto& q = idle_[key];
    if (q.size() >= per_key_) return t;
    q.push_back(std::move(t));
    return std::nullopt;
  }
  // Every idle item, the pool left empty.
  std::vector<T> drain() {
    std::lock_guard g(lock_);
    std::vector<T> out;
    for (auto& [k, q] : idle_)
      for (auto& t : q) out.push_back(std::move(t));
    idle_.clear();
    return out;
  }
  std::size_t idle(const std::string& key) const {
    std::lock_guard g(lock_);
    const auto it = idle_.find(key);
    return it == idle_.end() ? 0 : it->second.size();
  }
  std::size_t reused() const {
    std::lock_guard g(lock_);
    return reused_;
  }
  std::size_t dropped() const {
    std::lock_guard g(lock_);
    return dropped_;
  }

 private:
  std::size_t per_key_;
  std::function<bool(T&)> usable_;
  mutable std::mutex lock_;
  std::map<std::string, std::deque<T>> idle_;
  std::size_t reused_ = 0, dropped_ = 0;
};

// An idle role process: its process and the runner's end of its channel.
struct PooledRole {
  RoleProcess proc;
  Channel channel;
  std::string verb_mark;  // its hello's, for the outside audit of its next case
};

// The run's idle roles, and how many roles started fresh and how many were served by one.
class RolePool {
 public:
  explicit RolePool(std::size_t per_key);
  std::optional<PooledRole> take(const std::string& key) { return pool_.take(key); }
  // Keeps a role whose case passed; one the pool has no room for is told to exit and reaped.
  void give(const std::string& key, PooledRole r);
  void note_fresh() {
    std::lock_guard g(lock_);
    ++fresh_;
  }
  // Tells every idle role to exit (its channel closed: a role that finished its case exits
  // 0) and reaps it, its group killed when it outlives a grace; returns how many did not
  // exit by themselves with 0.
  int shutdown();
  std::size_t reused() const { return pool_.reused(); }
  std::size_t fresh() const {
    std::lock_guard g(lock_);
    return fresh_;
  }
  std::size_t died_idle() const { return pool_.dropped(); }

 private:
  KeyedPool<PooledRole> pool_;
  mutable std::mutex lock_;
  std::size_t fresh_ = 0;
};

// Ends a kept role: closes its channel (the role exits 0) and reaps it; false when it did
// not exit by itself with 0 within a grace (its group then killed).
bool end_kept_role(PooledRole& r);

}  // namespace ipcheck::runner_detail
