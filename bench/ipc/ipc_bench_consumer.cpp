// ipcheck-bench-ipc's consumer (ipc_bench.cpp holds the command line, the producer and
// main): it receives the producer's exports, registers every benchmark this adapter and its
// floor can run (the others are skipped, with why) and runs them with Google Benchmark.
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <fstream>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "count_marker.h"
#include "floor.hpp"
#include "ipc_bench.hpp"
#include "peer_messages.hpp"
#include "ipcheck/adapter.hpp"
#include "ipcheck/bench/summary.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/owned.hpp"

namespace ipcheck::bench {
namespace {

using ipcref::unique_fd;

struct Peer {
  std::map<std::size_t, ExportMsg> mem, phys;
  std::optional<ExportMsg> ping, pong;
  unique_fd control_fd;
  std::vector<std::pair<std::string, std::string>> skips;  // benchmark, why
};

Peer receive_exports(Channel& ch) {
  Peer p;
  for (;;) {
    auto m = ch.receive(60'000);
    if (!m) throw ChannelError("the producer sent nothing for 60 s");
    if (m->type != MsgType::data) continue;
    wire::Any said = wire::decode(*m);
    if (std::holds_alternative<wire::Ready>(said)) return p;
    if (const auto* e = std::get_if<wire::Error>(&said)) throw ChannelError(e->why);
    if (auto* skip = std::get_if<wire::Skip>(&said)) {
      p.skips.emplace_back(std::move(skip->benchmark), std::move(skip->why));
    } else if (auto* mem = std::get_if<wire::MemExport>(&said)) {
      p.mem[mem->size] = ExportMsg{mem->size, std::move(mem->bytes), mem->fd.take()};
    } else if (auto* phys = std::get_if<wire::PhysExport>(&said)) {
      p.phys[phys->size] = ExportMsg{phys->size, std::move(phys->bytes), phys->fd.take()};
    } else if (auto* event = std::get_if<wire::EventExport>(&said)) {
      (event->ping ? p.ping : p.pong) = ExportMsg{0, std::move(event->bytes), event->fd.take()};
    } else if (auto* control = std::get_if<wire::Control>(&said)) {
      p.control_fd = control->fd.take();
    }
  }
}

class Consumer {
 public:
  Consumer(Channel& ch, Adapter& a, Floor& floor, Peer& peer, std::string adapter)
      : ch_(ch), a_(a), floor_(floor), peer_(peer), name_(std::move(adapter)) {}

  ~Consumer() {
    while (!owned_.empty()) owned_.pop_back();
    if (control_) ::munmap(control_, 4096);
  }

  // Registers every benchmark this adapter and floor can run; the others are skipped with why.
  void register_all() {
    void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, peer_.control_fd.get(), 0);
    if (page == MAP_FAILED) throw ChannelError(std::string("mmap of the control page: ") + std::strerror(errno));
    control_ = static_cast<Control*>(page);
    const auto floors = floor_.describe();
    for (const auto& [kind, what] : floors) benchmark::AddCustomContext("floor:" + name_ + "/floor/" + kind, what);

    for (std::size_t size : kSizes) {
      register_mem_get(size);
      register_mem_open(size);
    }
    for (std::size_t size : kSizes) {
      auto it = peer_.phys.find(size);
      if (it == peer_.phys.end()) continue;  // the producer said why (a skip)
      const ExportMsg* e = &it->second;
      add("phys_open_map/" + size_name(size), false, [this, e](benchmark::State& st) { bench_phys(st, *e); });
      add_floor("phys_open_map/" + size_name(size), false, [this, e](benchmark::State& st) {
        for (auto _ : st) floor_.phys_open_map(*e);
      });
    }
    register_events();
    for (const auto& [what, why] : peer_.skips) skip(what, why);
  }

  const std::vector<std::pair<std::string, std::string>>& skipped() const { return skipped_; }

  // --counts: the gated figures (bench/counts.md) and their floors, each run kWarm times
  // uncounted, then kCounted times with its counted part between count markers (region id
  // figure * 100 + run), for ipcheck-bench-count to count; `names_file` gets which id is
  // which figure. A failed verb ends the consumer (exit 1) with what failed.
  void count_all(const std::string& filter, const std::string& names_file) {
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

 private:
  static constexpr int kWarm = 3, kCounted = 3;
  using CountedOp = std::function<void(bool floor, std::uint64_t id)>;

  // A count marker, or nothing for a warm-up run (id 0).
  static void mark(unsigned long long kind, std::uint64_t id) {
    if (id != 0) ipcheck_count_mark(kind, id);
  }
  static void must(const Outcome& o, const char* verb) {
    if (!o.ok()) throw ChannelError(std::string(verb) + ": " + o.describe());
  }

  void phys_once(const ExportMsg& e) {
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
  void count_events(Count& count) {
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

  using Body = std::function<void(benchmark::State&)>;

  void skip(const std::string& what, const std::string& why) {
    skipped_.emplace_back(name_ + "/" + what, why);
    benchmark::AddCustomContext("skipped:" + name_ + "/" + what, why);
  }

  void add_raw(const std::string& name, bool manual, const LabelInfo& label, Body body) {
    const std::string text = make_label(label);
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [body, text](benchmark::State& st) {
      try {
        body(st);
      } catch (const std::exception& e) {
        st.SkipWithError(e.what());
      }
      st.SetLabel(text);
    });
    b->Unit(benchmark::kNanosecond);
    if (manual) b->UseManualTime();
  }

  // "<adapter>/<what>" held against "<adapter>/floor/<what>" (or no floor).
  void add(const std::string& what, bool manual, Body body, bool with_floor = true, LabelInfo label = {}) {
    if (with_floor) label.floor = name_ + "/floor/" + what;
    add_raw(name_ + "/" + what, manual, label, std::move(body));
  }
  void add_floor(const std::string& what, bool manual, Body body) {
    add_raw(name_ + "/floor/" + what, manual, {}, std::move(body));
  }

  // The first device after 0 with the IPC-memory aspect; 0 when there is none.
  int other_device() {
    const AdapterInfo info = a_.info();
    for (std::size_t i = 1; i < info.devices.size(); ++i)
      if (auto it = info.devices[i].aspects.find("ipc_memory"); it != info.devices[i].aspects.end() && it->second)
        return static_cast<int>(i);
    return 0;
  }

  static bool failed(benchmark::State& st, const Outcome& o, const char* verb) {
    if (o.ok()) return false;
    st.SkipWithError((std::string(verb) + ": " + o.describe()).c_str());
    return true;
  }

  void bench_get(benchmark::State& st, DevPtr mine) {
    for (auto _ : st) {
      const auto t0 = Clock::now();
      auto e = a_.mem_get(mine);
      const auto t1 = Clock::now();
      if (failed(st, e.outcome, "mem_get")) break;
      (void)a_.mem_put(e.value.id);  // where put exists; CUDA's handles hold nothing
      st.SetIterationTime(seconds(t0, t1));
    }
  }

  void bench_put(benchmark::State& st, DevPtr mine) {
    for (auto _ : st) {
      auto e = a_.mem_get(mine);
      if (failed(st, e.outcome, "mem_get")) break;
      const auto t0 = Clock::now();
      const Outcome o = a_.mem_put(e.value.id);
      const auto t1 = Clock::now();
      if (failed(st, o, "mem_put")) break;
      st.SetIterationTime(seconds(t0, t1));
    }
  }

  void bench_open(benchmark::State& st, const ExportMsg& e, int device = 0) {
    for (auto _ : st) {
      const auto t0 = Clock::now();
      auto p = a_.mem_open(e.bytes, e.fd.get(), device);
      const auto t1 = Clock::now();
      if (failed(st, p.outcome, "mem_open") || failed(st, a_.mem_close(p.value), "mem_close")) break;
      st.SetIterationTime(seconds(t0, t1));
    }
  }

  void bench_close(benchmark::State& st, const ExportMsg& e) {
    for (auto _ : st) {
      auto p = a_.mem_open(e.bytes, e.fd.get(), 0);
      if (failed(st, p.outcome, "mem_open")) break;
      const auto t0 = Clock::now();
      const Outcome o = a_.mem_close(p.value);
      const auto t1 = Clock::now();
      if (failed(st, o, "mem_close")) break;
      st.SetIterationTime(seconds(t0, t1));
    }
  }

  void bench_open_close(benchmark::State& st, const ExportMsg& e) {
    for (auto _ : st) {
      auto p = a_.mem_open(e.bytes, e.fd.get(), 0);
      if (failed(st, p.outcome, "mem_open") || failed(st, a_.mem_close(p.value), "mem_close")) break;
    }
  }

  // An open of an export this process holds open already (a first open held, untimed, across
  // the run): CUDA answers with the first open's pointer, reference-counted; ref maps again.
  void bench_open_repeat(benchmark::State& st, const ExportMsg& e) {
    auto held = a_.mem_open(e.bytes, e.fd.get(), 0);
    if (failed(st, held.outcome, "mem_open (the first, held)")) return;
    bench_open(st, e);
    (void)failed(st, a_.mem_close(held.value), "mem_close (the first)");
  }

  // The floor's open (close untimed).
  void floor_open(benchmark::State& st, const ExportMsg& e) {
    for (auto _ : st) {
      const auto t0 = Clock::now();
      const std::uint64_t p = floor_.open(e);
      const auto t1 = Clock::now();
      floor_.close(p, e);
      st.SetIterationTime(seconds(t0, t1));
    }
  }

  void bench_touch(benchmark::State& st, const ExportMsg& e) {
    for (auto _ : st) {
      auto p = a_.mem_open(e.bytes, e.fd.get(), 0);
      if (failed(st, p.outcome, "mem_open")) break;
      const auto t0 = Clock::now();
      const Outcome touched = floor_.adapter_touch(a_, p.value, e.size);
      const auto t1 = Clock::now();
      const Outcome closed = a_.mem_close(p.value);
      if (failed(st, touched, "first touch") || failed(st, closed, "mem_close")) break;
      st.SetIterationTime(seconds(t0, t1));
    }
  }

  void bench_phys(benchmark::State& st, const ExportMsg& e) {
    for (auto _ : st) {
      auto pm = a_.phys_open(e.bytes, e.fd.get(), 0);
      if (failed(st, pm.outcome, "phys_open")) break;
      Owned opened = Owned::opened_physical(a_, pm.value);
      auto va = a_.vm_reserve(0, e.size);
      if (failed(st, va.outcome, "vm_reserve")) break;
      Owned range = Owned::reservation(a_, va.value, e.size);
      if (failed(st, a_.vm_map(va.value, e.size, pm.value, 0), "vm_map")) break;
      if (failed(st, a_.vm_unmap(va.value, e.size), "vm_unmap")) break;
      if (failed(st, range.reset(), "vm_free") || failed(st, opened.reset(), "phys_close")) break;
    }
  }

  // The exporter's verbs on an allocation of this process: mem_get, and mem_put where put exists.
  void register_mem_get(std::size_t size) {
    const std::string sz = size_name(size);
    auto own = a_.alloc(0, size, MemKind::device);
    if (!own.ok()) throw ChannelError("alloc(" + sz + "): " + own.outcome.describe());
    owned_.push_back(Owned::allocation(a_, own.value));
    const DevPtr mine = own.value;
    add("mem_get/" + sz, true, [this, mine](benchmark::State& st) { bench_get(st, mine); });
    add_floor("mem_get/" + sz, true, [this, mine, size](benchmark::State& st) {
      for (auto _ : st) {
        const auto t0 = Clock::now();
        floor_.get(mine, size);
        st.SetIterationTime(seconds(t0, Clock::now()));
      }
    });
    // CUDA has no put: the benchmark exists only where put does.
    if (auto e = a_.mem_get(mine); e.ok()) {
      const Outcome put = a_.mem_put(e.value.id);
      if (put.ok())
        add("mem_put/" + sz, true, [this, mine](benchmark::State& st) { bench_put(st, mine); }, false);
      else
        skip("mem_put/" + sz, put.describe());
    }
  }

  // The importer's verbs on the producer's export of this size.
  void register_mem_open(std::size_t size) {
    const std::string sz = size_name(size);
    auto it = peer_.mem.find(size);
    if (it == peer_.mem.end()) throw ChannelError("the producer sent no " + sz + " memory export");
    const ExportMsg* e = &it->second;
    add("mem_open/" + sz, true, [this, e](benchmark::State& st) { bench_open(st, *e); });
    add_floor("mem_open/" + sz, true, [this, e](benchmark::State& st) { floor_open(st, *e); });
    // The same export opened on another device (the runtime's plain open, with CUDA's lazy
    // peer access), held against the open on the exporter's device 0.
    if (const int other = other_device(); other > 0) {
      LabelInfo l;
      l.floor = name_ + "/mem_open/" + sz;
      l.note = "open on device " + std::to_string(other) + " of an export made on device 0, against the open on device 0";
      add_raw(name_ + "/mem_open_other_device/" + sz, true, l,
              [this, e, other](benchmark::State& st) { bench_open(st, *e, other); });
    } else if (size == kSizes[0]) {
      skip("mem_open_other_device", "needs a second device with aspect ipc_memory besides device 0");
    }
    add("mem_open_repeat/" + sz, true, [this, e](benchmark::State& st) { bench_open_repeat(st, *e); });
    add_floor("mem_open_repeat/" + sz, true, [this, e](benchmark::State& st) {
      const std::uint64_t held = floor_.open(*e);
      floor_open(st, *e);
      floor_.close(held, *e);
    });
    add("mem_close/" + sz, true, [this, e](benchmark::State& st) { bench_close(st, *e); });
    add_floor("mem_close/" + sz, true, [this, e](benchmark::State& st) {
      for (auto _ : st) {
        const std::uint64_t p = floor_.open(*e);
        const auto t0 = Clock::now();
        floor_.close(p, *e);
        st.SetIterationTime(seconds(t0, Clock::now()));
      }
    });
    // Its goal (bench/goals.md) is marked by ipcheck bench, not here.
    add("mem_open_close/" + sz, false, [this, e](benchmark::State& st) { bench_open_close(st, *e); });
    add_floor("mem_open_close/" + sz, false, [this, e](benchmark::State& st) {
      for (auto _ : st) floor_.close(floor_.open(*e), *e);
    });
    if (floor_.has_proven_open()) {
      // Not a floor of a verb: what revocation's one read of the exporter costs over the bare
      // syscalls, the least any open that honours put and free pays.
      LabelInfo l;
      l.floor = name_ + "/floor/mem_open_close/" + sz;
      l.note = "the floor plus one process_vm_readv of the exporter (the export proof revocation needs)";
      add_raw(name_ + "/floor/mem_open_close_proven/" + sz, false, l, [this, e](benchmark::State& st) {
        for (auto _ : st) floor_.close(floor_.open_proven(*e), *e);
      });
    }
    add("mem_first_touch/" + sz, true, [this, e](benchmark::State& st) { bench_touch(st, *e); });
    add_floor("mem_first_touch/" + sz, true, [this, e, size](benchmark::State& st) {
      for (auto _ : st) {
        const std::uint64_t p = floor_.open(*e);
        const auto t0 = Clock::now();
        floor_.touch(p, size);
        const auto t1 = Clock::now();
        floor_.close(p, *e);
        st.SetIterationTime(seconds(t0, t1));
      }
    });
  }

  void register_events() {
    if (!peer_.ping || !peer_.pong) return;  // the producer said why
    if (const AdapterInfo info = a_.info(); !info.any_process_ends_pending_event)
      return skip("event_signal_wake", "a round trip re-arms each event in its waiter and ends it by the other "
                                       "process's signal, and here only the process that made an event pending can "
                                       "end it (" + info.pending_event_note + ")");
    auto ping = a_.event_open(peer_.ping->bytes, peer_.ping->fd.get(), 0);
    if (!ping.ok()) return skip("event_signal_wake", "event_open: " + ping.outcome.describe());
    owned_.push_back(Owned::event(a_, ping.value));
    auto pong = a_.event_open(peer_.pong->bytes, peer_.pong->fd.get(), 0);
    if (!pong.ok()) return skip("event_signal_wake", "event_open: " + pong.outcome.describe());
    owned_.push_back(Owned::event(a_, pong.value));
    // A ping-pong needs the waiter to re-arm its event; without reset there is no second round.
    if (Outcome o = a_.event_reset(pong.value); !o.ok())
      return skip("event_signal_wake", "a round trip re-arms the event with event_reset, which answers " + o.describe());
    ping_ = ping.value;
    pong_ = pong.value;
    LabelInfo label;
    label.note = "per round trip: two signal-to-wake latencies across the processes";
    add("event_signal_wake", false, [this](benchmark::State& st) { bench_events(st, false); }, true, label);
    LabelInfo floor_label;
    floor_label.note = "per round trip: FUTEX_WAKE / FUTEX_WAIT on a shared page, no FUTEX_PRIVATE_FLAG";
    add_raw(name_ + "/floor/event_signal_wake", false, floor_label,
            [this](benchmark::State& st) { bench_events(st, true); });
    benchmark::AddCustomContext("floor:" + name_ + "/floor/event_signal_wake",
                                "a raw shared-futex ping-pong: store + FUTEX_WAKE, FUTEX_WAIT until set");
  }

  void bench_events(benchmark::State& st, bool raw) {
    send(ch_, wire::Echo{raw});
    std::string error;
    for (auto _ : st) {
      if (raw) {
        futex_set_wake(&control_->ping);
        if (!futex_wait_set(&control_->pong, std::chrono::seconds(10))) {
          error = "no pong within 10 s";
          break;
        }
        control_->pong.store(0, std::memory_order_relaxed);
        continue;
      }
      if (Outcome o = a_.event_signal(ping_); !o.ok()) {
        error = "event_signal: " + o.describe();
        break;
      }
      auto w = a_.event_wait(pong_, std::chrono::seconds(10));
      if (!w.ok() || !w.value) {
        error = w.ok() ? "no pong within 10 s" : "event_wait: " + w.outcome.describe();
        break;
      }
      if (Outcome o = a_.event_reset(pong_); !o.ok()) {
        error = "event_reset: " + o.describe();
        break;
      }
    }
    // Ends the producer's echo loop: the stop flag, then one more ping.
    control_->stop.store(1, std::memory_order_release);
    if (raw) futex_set_wake(&control_->ping);
    else (void)a_.event_signal(ping_);
    std::string echoed_error;
    for (;;) {
      auto m = ch_.receive(60'000);
      if (!m) {
        echoed_error = "the producer did not end its echo loop within 60 s";
        break;
      }
      if (m->type != MsgType::data) continue;
      if (const wire::Any said = wire::decode(*m); const auto* echoed = std::get_if<wire::Echoed>(&said)) {
        echoed_error = echoed->error;
        break;
      }
    }
    control_->stop.store(0, std::memory_order_release);
    control_->pong.store(0, std::memory_order_relaxed);
    if (!raw) (void)a_.event_reset(pong_);
    if (error.empty()) error = echoed_error;
    if (!error.empty()) st.SkipWithError(error.c_str());
  }

  Channel& ch_;
  Adapter& a_;
  Floor& floor_;
  Peer& peer_;
  std::string name_;
  std::deque<Owned> owned_;
  ObjectId ping_ = 0, pong_ = 0;
  Control* control_ = nullptr;
  std::vector<std::pair<std::string, std::string>> skipped_;
};

// Exit status 77: the adapter (or its floor) cannot run here; the reason is on stderr.
constexpr int kSkipped = 77;

}  // namespace

int run_consumer(Args& args) {
  Channel ch{unique_fd(kPeerFd)};
  std::string why;
  auto a = start_adapter(args, why);
  if (!a) {
    std::fprintf(stderr, "ipcheck-bench-ipc: skipped: %s\n", why.c_str());
    ch.send(wire::Quit{});
    return kSkipped;
  }
  auto floor = make_floor(args.adapter, args.options, why);
  if (!floor) {
    std::fprintf(stderr, "ipcheck-bench-ipc: skipped: no floor for %s: %s\n", args.adapter.c_str(), why.c_str());
    ch.send(wire::Quit{});
    return kSkipped;
  }
  if (!args.counts.empty()) {
    if (!IPCHECK_COUNT_MARKERS) {
      std::fprintf(stderr, "ipcheck-bench-ipc: skipped: --counts needs x86-64 (its count markers are int3)\n");
      ch.send(wire::Quit{});
      return kSkipped;
    }
    try {
      Peer peer = receive_exports(ch);
      Consumer c(ch, *a, *floor, peer, args.adapter);
      c.count_all(args.counts_filter, args.counts);
      ch.send(wire::Quit{});
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ipcheck-bench-ipc consumer: %s\n", e.what());
      return 1;
    }
  }
  int argc = static_cast<int>(args.rest.size());
  args.rest.push_back(nullptr);
  benchmark::Initialize(&argc, args.rest.data());
  if (benchmark::ReportUnrecognizedArguments(argc, args.rest.data())) return 2;
  const AdapterInfo info = a->info();
  benchmark::AddCustomContext("ipcheck.adapter", args.adapter);
  benchmark::AddCustomContext("ipcheck.driver", info.driver_name + " " + info.driver_version);
  benchmark::AddCustomContext("ipcheck.transport", info.transport);
  int status = 0;
  try {
    Peer peer = receive_exports(ch);
    Consumer c(ch, *a, *floor, peer, args.adapter);
    c.register_all();
    for (const auto& [what, reason] : c.skipped()) std::fprintf(stderr, "skipped %s: %s\n", what.c_str(), reason.c_str());
    benchmark::RunSpecifiedBenchmarks();
    ch.send(wire::Quit{});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ipcheck-bench-ipc consumer: %s\n", e.what());
    status = 1;
  }
  benchmark::Shutdown();
  return status;
}

}  // namespace ipcheck::bench
