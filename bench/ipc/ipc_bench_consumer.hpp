// ipcheck-bench-ipc's consumer, shared by its files: ipc_bench_consumer.cpp (the process:
// the adapter, the floor and the producer's exports set up, then one of the two phases),
// ipc_bench_timed.cpp (the timed phase: every benchmark registered and run by Google
// Benchmark) and ipc_bench_counted.cpp (the counted phase, --counts: each gated figure run
// between count markers). Private to bench/ipc.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "floor.hpp"
#include "ipc_bench.hpp"
#include "ipcheck/adapter.hpp"
#include "ipcheck/bench/summary.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/owned.hpp"

namespace ipcheck::bench::consumer_detail {

using ipcref::unique_fd;

struct Peer {
  std::map<std::size_t, ExportMsg> mem, phys;
  std::optional<ExportMsg> ping, pong;
  unique_fd control_fd;
  std::vector<std::pair<std::string, std::string>> skips;  // benchmark, why
};

// The producer's exports, its skips and the control page, up to its Ready.
Peer receive_exports(Channel& ch);

class Consumer {
 public:
  Consumer(Channel& ch, Adapter& a, Floor& floor, Peer& peer, std::string adapter);
  ~Consumer();

  // Registers every benchmark this adapter and floor can run; the others are skipped with why
  // (ipc_bench_timed.cpp).
  void register_all();

  const std::vector<std::pair<std::string, std::string>>& skipped() const { return skipped_; }

  // --counts: the gated figures (bench/counts.md) and their floors, each run kWarm times
  // uncounted, then kCounted times with its counted part between count markers (region id
  // figure * 100 + run), for ipcheck-bench-count to count; `names_file` gets which id is
  // which figure. A failed verb ends the consumer (exit 1) with what failed.
  // (ipc_bench_counted.cpp)
  void count_all(const std::string& filter, const std::string& names_file);

 private:
  static constexpr int kWarm = 3, kCounted = 3;
  using CountedOp = std::function<void(bool floor, std::uint64_t id)>;

  // The counted phase (ipc_bench_counted.cpp).
  static void mark(unsigned long long kind, std::uint64_t id);
  static void must(const Outcome& o, const char* verb);
  void phys_once(const ExportMsg& e);
  template <class Count>
  void count_events(Count& count);

  // The timed phase (ipc_bench_timed.cpp).
  using Body = std::function<void(benchmark::State&)>;
  void skip(const std::string& what, const std::string& why);
  void add_raw(const std::string& name, bool manual, const LabelInfo& label, Body body);
  void add(const std::string& what, bool manual, Body body, bool with_floor = true, LabelInfo label = {});
  void add_floor(const std::string& what, bool manual, Body body);
  int other_device();
  static bool failed(benchmark::State& st, const Outcome& o, const char* verb);
  void bench_get(benchmark::State& st, DevPtr mine);
  void bench_put(benchmark::State& st, DevPtr mine);
  void bench_open(benchmark::State& st, const ExportMsg& e, int device = 0);
  void bench_close(benchmark::State& st, const ExportMsg& e);
  void bench_open_close(benchmark::State& st, const ExportMsg& e);
  void bench_open_repeat(benchmark::State& st, const ExportMsg& e);
  void floor_open(benchmark::State& st, const ExportMsg& e);
  void bench_touch(benchmark::State& st, const ExportMsg& e);
  void bench_phys(benchmark::State& st, const ExportMsg& e);
  void register_mem_get(std::size_t size);
  void register_mem_open(std::size_t size);
  void register_events();
  void bench_events(benchmark::State& st, bool raw);

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

}  // namespace ipcheck::bench::consumer_detail
