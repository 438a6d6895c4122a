// Role processes kept for another case (runner_pool.hpp): which cases and runs may reuse
// one, what makes two interchangeable, the run's idle roles and their end.
#include "runner_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "ipcheck/messages.hpp"

namespace ipcheck::runner_detail {

std::string fresh_process_reason(const CaseDef& def, const InjectPoint* inject) {
  if (!def.fresh_process.empty()) return def.fresh_process;
  if (inject) return "a fault is injected";
  if (!def.failpoints.empty()) return "a role runs with failpoints";
  if (!def.role_env.empty()) return "a role has environment of its own";
  if (!def.expendable.empty()) return "a role may die";
  // (Injection-only roles start only where a fault is injected.)
  if (std::any_of(def.roles.begin(), def.roles.end(), [](const RoleDef& r) { return r.on_demand; }))
    return "it has on-demand roles";
  if (def.area() == "robustness") return "a robustness case: what it does may leave the runtime changed";
  return {};
}

namespace {

bool names_defect(const std::string& key_value) {
  const std::string key = key_value.substr(0, key_value.find('='));
  return key == "IPCREF_DEFECT" || key == "IPCHECK_ZE_DEFECT";
}

}  // namespace

std::string run_reuse_blocked(const RunOptions& o) {
  for (const char* v : {"IPCREF_DEFECT", "IPCHECK_ZE_DEFECT"})
    if (const char* s = std::getenv(v); s && *s) return std::string("a defect is seeded (") + v + ")";
  if (std::any_of(o.env.begin(), o.env.end(), names_defect)) return "a defect is seeded in the roles' environment";
  return {};
}

std::string role_pool_key(const RunOptions& o, const std::string& executable, const std::vector<std::string>& env,
                          int device, bool events) {
  nlohmann::json k = {{"program", executable}, {"adapter", o.adapter},       {"options", o.adapter_options},
                      {"transport", o.transport}, {"audit", o.audit},      {"env", env},
                      {"device", device},         {"events", events}};
  return k.dump();
}

bool end_kept_role(PooledRole& r) {
  r.channel = Channel();  // a role that finished its case and reads EOF exits 0
  const auto st = r.proc.wait_for(std::chrono::seconds(5));
  return st && st->exited && st->code == 0;
}

RolePool::RolePool(std::size_t per_key)
    : pool_(per_key, [](PooledRole& r) {
        // Died while idle (or its group has a stray): not to serve a case; reaped here.
        if (r.proc.poll_exit()) return false;
        if (!r.proc.group_survivors().empty()) {
          end_kept_role(r);
          return false;
        }
        return true;
      }) {}

void RolePool::give(const std::string& key, PooledRole r) {
  if (auto back = pool_.give(key, std::move(r))) end_kept_role(*back);
}

int RolePool::shutdown() {
  int unclean = 0;
  for (auto& r : pool_.drain())
    if (!end_kept_role(r)) ++unclean;
  return unclean;
}

}  // namespace ipcheck::runner_detail
