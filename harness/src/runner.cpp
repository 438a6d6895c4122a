// The runner's entry points but run_suite (runner_suite.cpp) and run_case
// (runner_case.cpp): the default expectations file, the selection, the adapter probe, the
// audit method. The rest is in runner_impl.hpp.
#include "ipcheck/runner.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <tuple>

#include "ipcheck/expectations.hpp"
#include "ipcheck/install_layout.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/messages.hpp"
#include "ipcheck/role_main.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/verdict.hpp"
#include "runner_impl.hpp"

namespace ipcheck {

using nlohmann::json;
using runner_detail::Clock;
using runner_detail::role_args;
using runner_detail::start_document;

std::string default_expectations_file(const std::string& adapter) {
  namespace fs = std::filesystem;
  const fs::path p = data_dir() / "expectations" / (adapter + ".txt");
  std::error_code ec;
  return fs::exists(p, ec) ? fs::weakly_canonical(p, ec).string() : std::string();
}

std::vector<const CaseDef*> select_cases(const RunOptions& o) {
  std::vector<const CaseDef*> out;
  for (const auto& c : cases()) {
    if (c.hidden && !o.include_hidden) {
      // Hidden cases run only when a filter names them exactly.
      if (std::none_of(o.filters.begin(), o.filters.end(), [&](const std::string& f) { return f == c.id; })) continue;
    }
    if (!o.filters.empty()) {
      const bool hit = std::any_of(o.filters.begin(), o.filters.end(), [&](const std::string& f) {
        return o.exact ? f == c.id : glob_match(f, c.id) || glob_match("*" + f + "*", c.id);
      });
      if (!hit) continue;
    }
    out.push_back(&c);
  }
  return out;
}

void validate_selection(const RunOptions& o) {
  for (const auto& f : o.filters) {
    RunOptions one = o;
    one.filters = {f};
    if (select_cases(one).empty())
      throw std::invalid_argument("filter '" + f + "' matches no case; 'ipcheck list' shows the case ids");
  }
  const auto selected = select_cases(o);
  if (selected.empty()) throw std::invalid_argument("no case selected");
  // --param keys: each must be read by a selected case, or it would change nothing.
  for (const auto& [key, value] : o.params) {
    std::set<std::string> known;
    for (const CaseDef* c : selected) known.insert(c->params.begin(), c->params.end());
    if (known.count(key)) {
      // A count sizes a loop: bounded here, before any case runs, by the smallest maximum of
      // the selected cases that read it.
      long most = 0;
      std::string who;
      for (const CaseDef* c : selected)
        if (auto it = c->param_max.find(key); it != c->param_max.end() && (most == 0 || it->second < most)) {
          most = it->second;
          who = c->id;
        }
      const bool digits = !value.empty() && value.size() <= 18 && value.find_first_not_of("0123456789") == std::string::npos;
      const long long v = digits ? std::stoll(value) : 0;
      if (most > 0 && (!digits || v < 1 || v > most))
        throw std::invalid_argument("--param " + key + " is '" + reports::escape_invalid_utf8(value) +
                                    "'; give a whole number from 1 to " + std::to_string(most) + " (the most " + who +
                                    " takes)");
      continue;
    }
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("--param '" + key + "' is read by no selected case; " +
                                (list.empty() ? std::string("the selected cases take no --param (the stress cases do, for example "
                                                            "--filter stress.open_close --exact --param cycles=N)")
                                              : "the selected cases read: " + list));
  }
  for (const auto& p : o.inject)
    if (std::none_of(selected.begin(), selected.end(), [&](const CaseDef* c) {
          return std::find(c->steps.begin(), c->steps.end(), p.describe()) != c->steps.end();
        }))
      throw std::invalid_argument("injection point '" + p.describe() +
                                  "' is no step of the selected cases; 'ipcheck list' shows each case's injection points");
}

namespace {

// What the probe's role said: its AdapterInfo document (null when it said none), or why its
// hello was refused (a role of another protocol version).
struct ProbeAnswer {
  json info;
  std::string refused;
};

// Answers the probe's hello with a start document and reads its info, for at most 60 s. A
// probe asked to hold its runtime says no `done`: its info is the end.
ProbeAnswer read_probe(Channel& ch, RoleProcess& proc, const RunOptions& o, bool hold) {
  ProbeAnswer a;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  try {
    while (Clock::now() < deadline) {
      auto m = ch.receive(200);
      if (!m) {
        proc.read_output();
        continue;
      }
      if (m->type == MsgType::hello) {
        try {
          msg::decode<msg::Hello>(*m);
        } catch (const ChannelError& e) {
          a.refused = e.what();
          return a;
        }
        msg::Start start{start_document(o, json::object({{"info", proc.pid()}}), nullptr)};
        if (hold) start.doc["hold"] = true;
        ch.send(start);
      } else if (m->type == MsgType::info) {
        a.info = msg::decode<msg::Info>(*m).doc;
        if (hold) break;
      } else if (m->type == MsgType::done) {
        break;
      }
    }
  } catch (const ChannelError&) {
  }
  return a;
}

}  // namespace

struct RuntimeHold {
  RoleProcess proc;
  Channel ch;
  RuntimeHold(RoleProcess p, Channel c) : proc(std::move(p)), ch(std::move(c)) {}
  RuntimeHold(const RuntimeHold&) = delete;
  RuntimeHold& operator=(const RuntimeHold&) = delete;
  ~RuntimeHold() {
    ch = Channel();  // the role's receive sees the channel closed and it returns
    proc.wait_for(std::chrono::seconds(10));  // past that, ~RoleProcess kills its group and reaps it
  }
};

AdapterProbe probe_adapter(const RunOptions& o, bool hold) {
  AdapterProbe p;
  const AdapterDesc* desc = find_adapter(o.adapter);
  p.info.adapter = o.adapter;
  if (desc) p.info.profiles = verdict::judged_profiles(desc->profiles);
  unique_fd mine, theirs;
  try {
    std::tie(mine, theirs) = make_channel_pair();
  } catch (const std::exception& e) {
    p.reason = std::string("cannot make a channel for the adapter probe: ") + e.what();
    p.broken = true;
    return p;
  }
  SpawnSpec spec;
  spec.executable = o.role_executable.empty() ? role_executable_for(o.adapter) : o.role_executable;
  spec.args = role_args(o, kInfoCase, "info");
  spec.env = o.env;
  spec.channel_fd = theirs.get();
  RoleProcess proc;
  try {
    proc = RoleProcess::spawn(spec);
  } catch (const SpawnError& e) {
    p.reason = std::string("cannot start an adapter probe: ") + e.what();
    p.broken = true;
    return p;
  }
  theirs.reset();
  Channel ch(std::move(mine));
  const ProbeAnswer answer = read_probe(ch, proc, o, hold);
  if (!answer.refused.empty()) {
    proc.signal_group(SIGKILL);  // it waits for a start that will not come
    p.broken = true;
    p.reason = "the adapter probe's role was refused: " + answer.refused;
    return p;
  }
  const bool held = hold && answer.info.is_object() && answer.info.contains("devices");
  if (!held) {
    while (proc.read_output()) {
    }
    for (int i = 0; i < 100 && !proc.poll_exit(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const json& info = answer.info;
  if (info.is_null()) {
    p.broken = true;
    p.reason = "the adapter probe ended without answering (" +
               (proc.status() ? proc.status()->describe() : std::string("still running")) + "): " +
               last_line(proc.output_tail());
    return p;
  }
  if (info.contains("harness_error")) {
    p.broken = true;
    p.reason = info["harness_error"].get<std::string>();
    return p;
  }
  if (info.contains("error")) {
    p.reason = info["error"].get<std::string>();
    if (info.value("by", "") == "runtime_init") p.by = "runtime_init";
    return p;
  }
  p.available = true;
  p.info.driver_name = info.value("driver_name", "");
  p.info.driver_version = info.value("driver_version", "");
  p.info.devices = info.value("devices", json::array());
  p.info.transport = info.value("transport", "");
  try {
    p.adapter_info = msg::info_from_doc(info);
  } catch (const ChannelError&) {
    // Malformed: no case is skipped on its account; each role judges its case's preconditions.
  }
  if (held) p.hold = std::make_shared<RuntimeHold>(std::move(proc), std::move(ch));
  return p;
}

bool prepare_audit(RunOptions& o, std::unique_ptr<Auditor>& holder) {
  if (o.audit != "bpf" || o.auditor) return true;
  AuditorLoad load = load_bpf_auditor();
  if (load.auditor) {
    holder = std::move(load.auditor);
    o.auditor = holder.get();
    return true;
  }
  o.audit = "proc";
  o.audit_note = "bpf audit unavailable, used proc: " + load.why_not;
  return false;
}

}  // namespace ipcheck
