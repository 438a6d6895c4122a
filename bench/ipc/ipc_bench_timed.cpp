// ipcheck-bench-ipc's consumer, the timed phase: every benchmark this adapter and its floor
// can run, registered with Google Benchmark (each verb beside its floor; the others skipped,
// with why), and the timed loops themselves.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "ipc_bench_consumer.hpp"
#include "peer_messages.hpp"

namespace ipcheck::bench::consumer_detail {

void Consumer::register_all() {
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

void Consumer::skip(const std::string& what, const std::string& why) {
  skipped_.emplace_back(name_ + "/" + what, why);
  benchmark::AddCustomContext("skipped:" + name_ + "/" + what, why);
}

void Consumer::add_raw(const std::string& name, bool manual, const LabelInfo& label, Body body) {
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
void Consumer::add(const std::string& what, bool manual, Body body, bool with_floor, LabelInfo label) {
  if (with_floor) label.floor = name_ + "/floor/" + what;
  add_raw(name_ + "/" + what, manual, label, std::move(body));
}
void Consumer::add_floor(const std::string& what, bool manual, Body body) {
  add_raw(name_ + "/floor/" + what, manual, {}, std::move(body));
}

// The first device after 0 with the IPC-memory aspect; 0 when there is none.
int Consumer::other_device() {
  const AdapterInfo info = a_.info();
  for (std::size_t i = 1; i < info.devices.size(); ++i)
    if (auto it = info.devices[i].aspects.find("ipc_memory"); it != info.devices[i].aspects.end() && it->second)
      return static_cast<int>(i);
  return 0;
}

bool Consumer::failed(benchmark::State& st, const Outcome& o, const char* verb) {
  if (o.ok()) return false;
  st.SkipWithError((std::string(verb) + ": " + o.describe()).c_str());
  return true;
}

void Consumer::bench_get(benchmark::State& st, DevPtr mine) {
  for (auto _ : st) {
    const auto t0 = Clock::now();
    auto e = a_.mem_get(mine);
    const auto t1 = Clock::now();
    if (failed(st, e.outcome, "mem_get")) break;
    (void)a_.mem_put(e.value.id);  // where put exists; CUDA's handles hold nothing
    st.SetIterationTime(seconds(t0, t1));
  }
}

void Consumer::bench_put(benchmark::State& st, DevPtr mine) {
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

void Consumer::bench_open(benchmark::State& st, const ExportMsg& e, int device) {
  for (auto _ : st) {
    const auto t0 = Clock::now();
    auto p = a_.mem_open(e.bytes, e.fd.get(), device);
    const auto t1 = Clock::now();
    if (failed(st, p.outcome, "mem_open") || failed(st, a_.mem_close(p.value), "mem_close")) break;
    st.SetIterationTime(seconds(t0, t1));
  }
}

void Consumer::bench_close(benchmark::State& st, const ExportMsg& e) {
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

void Consumer::bench_open_close(benchmark::State& st, const ExportMsg& e) {
  for (auto _ : st) {
    auto p = a_.mem_open(e.bytes, e.fd.get(), 0);
    if (failed(st, p.outcome, "mem_open") || failed(st, a_.mem_close(p.value), "mem_close")) break;
  }
}

// An open of an export this process holds open already (a first open held, untimed, across
// the run): CUDA answers with the first open's pointer, reference-counted; ref maps again.
void Consumer::bench_open_repeat(benchmark::State& st, const ExportMsg& e) {
  auto held = a_.mem_open(e.bytes, e.fd.get(), 0);
  if (failed(st, held.outcome, "mem_open (the first, held)")) return;
  bench_open(st, e);
  (void)failed(st, a_.mem_close(held.value), "mem_close (the first)");
}

// The floor's open (close untimed).
void Consumer::floor_open(benchmark::State& st, const ExportMsg& e) {
  for (auto _ : st) {
    const auto t0 = Clock::now();
    const std::uint64_t p = floor_.open(e);
    const auto t1 = Clock::now();
    floor_.close(p, e);
    st.SetIterationTime(seconds(t0, t1));
  }
}

void Consumer::bench_touch(benchmark::State& st, const ExportMsg& e) {
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

void Consumer::bench_phys(benchmark::State& st, const ExportMsg& e) {
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
void Consumer::register_mem_get(std::size_t size) {
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
void Consumer::register_mem_open(std::size_t size) {
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

void Consumer::register_events() {
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

void Consumer::bench_events(benchmark::State& st, bool raw) {
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

}  // namespace ipcheck::bench::consumer_detail
