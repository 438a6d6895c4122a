// `ipcheck fuzz-role`: the producer and consumer processes of a fuzz campaign, started by
// `ipcheck fuzz` (fork + exec, own process group), never by people. Only these processes
// initialise an adapter; the campaign parent never does.
//
// The producer allocates the campaign's set-up (detail::kSetup): exported allocations and
// decoys (never exported), each filled with its own canary, and one export put before the
// campaign (a stale handle). This file holds the command, the producer and the set-up both
// roles make; a consumer worker is roles_consumer.cpp's.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>

#include "ipcheck/adapter.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "ipcheck/owned.hpp"
#include "campaign_messages.hpp"
#include "protocol.hpp"
#include "roles_impl.hpp"
#include "targets.hpp"

namespace ipcheck::fuzz {
namespace detail {

std::unique_ptr<Adapter> make_adapter(const nlohmann::json& start) {
  const std::string name = start.at("adapter").get<std::string>();
  const AdapterDesc* desc = find_adapter(name);
  if (!desc) throw RoleFailure("adapter", Outcome::failure(Errc::invalid, "unknown adapter '" + name + "'"));
  auto a = desc->create();
  AdapterConfig c;
  c.transport = start.value("transport", "auto");
  c.runner_pid = start.value("runner_pid", 0);
  c.events = start.value("target", "memory") == "event";  // only event campaigns use the event verbs
  if (auto it = start.find("adapter_options"); it != start.end() && it->is_object())
    for (const auto& [k, v] : it->items()) c.options[k] = v.get<std::string>();
  need(a->init(c), "init");
  return a;
}

void build_setup(Adapter& a, const std::vector<AllocSpec>& specs, const std::string& who, std::uint64_t salt_seed,
                 SetupState& s) {
  const AdapterInfo info = a.info();
  const int devices = static_cast<int>(std::max<std::size_t>(a.device_count(), 1));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const AllocSpec& spec = specs[i];
    const std::string name = who + ".alloc[" + std::to_string(i) + "]";
    const std::set<int> before = open_fds();
    const DevPtr p = need(a.alloc(std::min(spec.device, devices - 1), spec.bytes, spec.kind), "alloc " + name);
    s.allocations.push_back(Owned::allocation(a, p));
    detail::name_new_fds(before, name, s);
    CanaryAlloc c = detail::canary_for(name, salt_seed, i, spec.bytes, spec.decoy);
    std::vector<std::byte> fill(spec.bytes);
    fill_canary(c.salt, 0, fill);
    need(a.write(p, fill), "fill " + name);
    auto offsets = spec.exports;
    if (spec.revoked) offsets = {0};
    for (const std::uint64_t off : offsets) {
      Result<Exported> got = a.mem_get(p + off);
      // Exporting host or shared memory is optional (sycl.mem.get.non_device): an adapter
      // that refuses it keeps the allocation as one more decoy, and the campaign says so.
      if (!got.ok() && spec.kind != MemKind::device &&
          (got.outcome.code == Errc::invalid || got.outcome.code == Errc::feature_not_supported ||
           got.outcome.code == Errc::not_implemented)) {
        s.unexported.push_back(name + " (" + std::string(mem_kind_name(spec.kind)) +
                               "): " + got.outcome.describe());
        c.decoy = true;
        break;
      }
      Exported e = need(std::move(got), "export " + name + " at offset " + std::to_string(off));
      const HandleLayout& l = layout_for(info.handle_layout, e.bytes.size());
      const int size_field = l.find(FieldRole::size);
      const Range r{off, size_field >= 0 && e.bytes.size() >= l.size ? l.get(e.bytes, size_field) : spec.bytes - off};
      // An API without put (CUDA) keeps this export live: the stale-export check is off.
      const Outcome put = spec.revoked ? a.mem_put(e.id) : Outcome::success();
      if (spec.revoked && put.code != Errc::not_implemented) {
        s.revoked_names.push_back(who + ".revoked[" + std::to_string(s.revoked.size()) + "]");
        need(put, "put " + s.revoked_names.back());
        c.revoked.push_back(r);
        s.revoked.push_back(std::move(e));
      } else {
        s.export_names.push_back(who + ".export[" + std::to_string(s.exported.size()) + "]");
        s.exports.push_back(Owned::mem_export(a, e.id));
        c.live.push_back(r);
        s.exported.push_back(std::move(e));
      }
    }
    s.table.push_back(std::move(c));
  }
}

void fail_setup(Channel& ch, const std::exception& e, const char* stage) {
  const auto* f = dynamic_cast<const RoleFailure*>(&e);
  ch.send(f ? wire::Error{f->stage(), f->what(), errc_name(f->outcome().code)} : wire::Error{stage, e.what(), "other"});
  ch.send(msg::Done{true, e.what()});
}

}  // namespace detail

namespace {

using nlohmann::json;

using detail::build_setup;
using detail::Consumer;
using detail::fail_setup;
using detail::make_adapter;
using detail::producer_setup;
using detail::SetupState;

json exports_json(const std::vector<Exported>& es, const std::vector<std::string>& names) {
  json out = json::array();
  for (std::size_t i = 0; i < es.size(); ++i)
    out.push_back({{"name", names[i]}, {"hex", to_hex(es[i].bytes)}, {"descriptor", es[i].fd >= 0}});
  return out;
}

// Waits for the parent's "stop" (or its end); false when the channel broke instead.
bool wait_stop(Channel& ch) {
  try {
    for (;;) {
      auto m = ch.receive(-1);
      if (m && m->type == MsgType::release) return true;
    }
  } catch (const ChannelError&) {
    return false;
  }
}

int run_producer(Channel& ch, const json& start) {
  std::unique_ptr<Adapter> adapter;
  SetupState s;
  try {
    adapter = make_adapter(start);
    const std::uint64_t salt = start.at("salt_seed").get<std::uint64_t>();
    const std::string target = start.value("target", "memory");
    if (target == "physical")
      detail::build_physical_setup(*adapter, detail::producer_phys_setup(), "producer", salt, s);
    else if (target == "event")
      detail::build_event_setup(*adapter, detail::producer_event_setup(), "producer", true, s);
    else
      build_setup(*adapter, producer_setup(), "producer", salt, s);
  } catch (const std::exception& e) {  // RoleFailure, or a handle fuzz/ cannot hold, for one
    fail_setup(ch, e, "setup");
    return 0;
  }
  const AdapterInfo info = adapter->info();
  // Descriptors first (when the convention moves them), then the set-up that names them.
  for (std::size_t i = 0; i < s.exported.size(); ++i)
    if (s.exported[i].fd >= 0) ch.send(msg::Send{"consumer", s.export_names[i], {}, CarriedFd::lend(s.exported[i].fd)});
  json values = json::array();
  values.push_back(detail::value_to_json({"producer.pid", FieldRole::pid, static_cast<std::uint64_t>(::getpid())}));
  for (const auto& v : s.fds) values.push_back(detail::value_to_json(v));
  json setup = {{"setup", detail::kSetup},
                {"info", {{"driver_name", info.driver_name}, {"driver_version", info.driver_version},
                          {"api_version", info.api_version},
                          {"handle_layout", info.layout_of(start.value("target", "memory"))},
                          {"transport", info.transport}, {"devices", info.devices.size()}}},
                {"exports", exports_json(s.exported, s.export_names)},
                {"revoked", exports_json(s.revoked, s.revoked_names)},
                {"unexported", s.unexported},
                {"allocs", detail::table_to_json(s.table)},
                {"values", values}};
  ch.send(wire::Setup{setup});
  wait_stop(ch);
  s.exports.clear();
  s.allocations.clear();
  ch.send(msg::Done{false, ""});
  return 0;
}

int fuzz_role(const std::vector<std::string>& args) {
  std::string role;
  for (std::size_t i = 0; i + 1 < args.size(); i += 2)
    if (args[i] == "--role") role = args[i + 1];
  if (role != "producer" && role != "consumer") {
    std::fprintf(stderr, "fuzz-role: --role is '%s'; the campaign starts 'producer' or 'consumer'\n", role.c_str());
    return cli::kUsage;
  }
  Channel ch{unique_fd(3)};
  if (!ch.send(msg::Hello{msg::kProtocolVersion, role, ::getpid(), ""})) return 3;
  std::map<std::string, unique_fd> descriptors;
  json start;
  for (;;) {
    std::optional<Message> m;
    try {
      m = ch.receive(-1);
    } catch (const ChannelError&) {
      return 3;  // the campaign ended before it started this role
    }
    if (!m) continue;
    if (m->type == MsgType::deliver) {
      msg::Deliver d = msg::decode<msg::Deliver>(*m);
      descriptors[d.tag] = d.fd.take();
    } else if (m->type == MsgType::start) {
      start = msg::decode<msg::Start>(*m).doc;
      break;
    }
  }
  if (role == "producer") return run_producer(ch, start);
  return Consumer(ch, start, std::move(descriptors)).run();
}

const cli::CommandRegistration registered_fuzz_role{{"fuzz-role", "run one process of a fuzz campaign (internal: ipcheck fuzz starts it)",
                                    fuzz_role, true}};

}  // namespace
}  // namespace ipcheck::fuzz
