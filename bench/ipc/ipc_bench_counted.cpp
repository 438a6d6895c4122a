// ipcheck-bench-ipc's consumer, the counted phase (--counts): the gated figures of
// bench/counts.md and their floors, each run between count markers for ipcheck-bench-count
// (count_tracer.c) to count, and the names file that says which region is which figure.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "count_marker.h"
#include "ipc_bench_consumer.hpp"
#include "peer_messages.hpp"

namespace ipcheck::bench::consumer_detail {

// A count marker, or nothing for a warm-up run (id 0).
void Consumer::mark(unsigned long long kind, std::uint64_t id) {
  if (id != 0) ipcheck_count_mark(kind, id);
}
void Consumer::must(const Outcome& o, const char* verb) {
  if (!o.ok()) throw ChannelError(std::string(verb) + ": " + o.describe());
}

void Consumer::phys_once(const ExportMsg& e) {
  auto pm = a_.phys_open(e.bytes, e.fd.get(), 0);
  must(pm.outcome, "phys_open");
  Owned opened = Owned::opened_physical(a_, pm.value);
  auto va = a_.vm_reserve(0, e.size);
  must(va.outcome, "vm_reserve");
  Owned range = Owned::reservation(a_, va.value, e.size);
  must(a_.vm_map(va.value, e.size, pm.value, 0), "vm_map");
  must(a_.vm_unmap(va.value, e.size), "vm_unmap");
  must(range.reset(), "vm_free");
  must(opened.reset(), "phys_close");
}

// The round trip counted in two parts, each deterministic: the signal, then (once the
// other process's answer is there: an uncounted wait) the wait that finds it and the
// reset. How long the other process takes to answer is the machine's, not a count.
template <class Count>
void Consumer::count_events(Count& count) {
  auto ping = a_.event_open(peer_.ping->bytes, peer_.ping->fd.get(), 0);
  must(ping.outcome, "event_open");
  owned_.push_back(Owned::event(a_, ping.value));
  auto pong = a_.event_open(peer_.pong->bytes, peer_.pong->fd.get(), 0);
  must(pong.outcome, "event_open");
  owned_.push_back(Owned::event(a_, pong.value));
  must(a_.event_reset(pong.value), "event_reset");
  ping_ = ping.value;
  pong_ = pong.value;
  bool echoing = false, echo_raw = false;
  auto stop_echo = [&] {
    if (!echoing) return;
    control_->stop.store(1, std::memory_order_release);
    if (echo_raw) futex_set_wake(&control_->ping);
    else (void)a_.event_signal(ping_);
    std::string error = "the producer did not end its echo loop within 60 s";
    for (;;) {
      auto m = ch_.receive(60'000);
      if (!m) break;
      if (m->type != MsgType::data) continue;
      if (const wire::Any said = wire::decode(*m); const auto* echoed = std::get_if<wire::Echoed>(&said)) {
        error = echoed->error;
        break;
      }
    }
    control_->stop.store(0, std::memory_order_release);
    control_->pong.store(0, std::memory_order_relaxed);
    (void)a_.event_reset(pong_);
    echoing = false;
    if (!error.empty()) throw ChannelError("event echo: " + error);
  };
  count("event_signal_wake", [&](bool raw, std::uint64_t id) {
    if (echoing && echo_raw != raw) stop_echo();
    if (!echoing) {
      send(ch_, wire::Echo{raw});
      echoing = true;
      echo_raw = raw;
    }
    if (raw) {
      mark(IPCHECK_COUNT_BEGIN, id);
      futex_set_wake(&control_->ping);
      mark(IPCHECK_COUNT_END, id);
      if (!futex_wait_set(&control_->pong, std::chrono::seconds(10))) throw ChannelError("no pong within 10 s");
      // The wait from the signalled state: a load that finds the word set (no clock read:
      // a clock read in the vDSO retries now and then, which would move the count).
      mark(IPCHECK_COUNT_BEGIN, id);
      const bool set = control_->pong.load(std::memory_order_acquire) != 0;
      control_->pong.store(0, std::memory_order_relaxed);
      mark(IPCHECK_COUNT_END, id);
      if (!set) throw ChannelError("no pong within 10 s");
      return;
    }
    mark(IPCHECK_COUNT_BEGIN, id);
    const Outcome signalled = a_.event_signal(ping_);
    mark(IPCHECK_COUNT_END, id);
    must(signalled, "event_signal");
    auto first = a_.event_wait(pong_, std::chrono::seconds(10));
    if (!first.ok() || !first.value) throw ChannelError("no pong within 10 s");
    mark(IPCHECK_COUNT_BEGIN, id);
    auto w = a_.event_wait(pong_, std::chrono::seconds(10));
    const Outcome reset = a_.event_reset(pong_);
    mark(IPCHECK_COUNT_END, id);
    if (!w.ok() || !w.value) throw ChannelError("event_wait did not find the pong it had waited for");
    must(reset, "event_reset");
  });
  stop_echo();
}

void Consumer::count_all(const std::string& filter, const std::string& names_file) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, peer_.control_fd.get(), 0);
  if (page == MAP_FAILED) throw ChannelError(std::string("mmap of the control page: ") + std::strerror(errno));
  control_ = static_cast<Control*>(page);
  const std::regex wanted(filter.empty() ? std::string(".*") : filter);
  nlohmann::json figures = nlohmann::json::array();
  std::uint64_t index = 0;
  auto count = [&](const std::string& what, const CountedOp& op) {
    for (const std::string& name : {name_ + "/" + what, name_ + "/floor/" + what}) {
      const bool floor = name.find("/floor/") != std::string::npos;
      if (!std::regex_search(name, wanted)) continue;
      ++index;
      for (int run = 0; run < kWarm + kCounted; ++run)
        op(floor, run < kWarm ? 0 : index * 100 + static_cast<std::uint64_t>(run - kWarm + 1));
      figures.push_back({{"name", name}, {"id", index * 100}, {"runs", kCounted}});
    }
  };
  for (std::size_t size : kSizes) {
    const std::string sz = size_name(size);
    const ExportMsg* e = &peer_.mem.at(size);
    count("mem_open_close/" + sz, [this, e](bool floor, std::uint64_t id) {
      mark(IPCHECK_COUNT_BEGIN, id);
      if (floor) {
        floor_.close(floor_.open(*e), *e);
      } else {
        auto p = a_.mem_open(e->bytes, e->fd.get(), 0);
        must(p.outcome, "mem_open");
        must(a_.mem_close(p.value), "mem_close");
      }
      mark(IPCHECK_COUNT_END, id);
    });
    count("mem_open_repeat/" + sz, [this, e](bool floor, std::uint64_t id) {
      // A first open held (uncounted), the counted open of the same export, both closed.
      if (floor) {
        const std::uint64_t held = floor_.open(*e);
        mark(IPCHECK_COUNT_BEGIN, id);
        const std::uint64_t again = floor_.open(*e);
        mark(IPCHECK_COUNT_END, id);
        floor_.close(again, *e);
        floor_.close(held, *e);
        return;
      }
      auto held = a_.mem_open(e->bytes, e->fd.get(), 0);
      must(held.outcome, "mem_open (the first, held)");
      mark(IPCHECK_COUNT_BEGIN, id);
      auto again = a_.mem_open(e->bytes, e->fd.get(), 0);
      mark(IPCHECK_COUNT_END, id);
      must(again.outcome, "mem_open (repeated)");
      must(a_.mem_close(again.value), "mem_close");
      must(a_.mem_close(held.value), "mem_close (the first)");
    });
  }
  for (std::size_t size : kSizes) {
    auto it = peer_.phys.find(size);
    if (it == peer_.phys.end()) continue;  // the producer said why: the figure is unmeasured
    const ExportMsg* e = &it->second;
    count("phys_open_map/" + size_name(size), [this, e](bool floor, std::uint64_t id) {
      mark(IPCHECK_COUNT_BEGIN, id);
      if (floor) floor_.phys_open_map(*e);
      else phys_once(*e);
      mark(IPCHECK_COUNT_END, id);
    });
  }
  if (peer_.ping && peer_.pong) count_events(count);
  std::ofstream out(names_file);
  out << nlohmann::json{{"figures", figures}}.dump(1) << "\n";
  if (!out) throw ChannelError("cannot write " + names_file);
}

}  // namespace ipcheck::bench::consumer_detail
