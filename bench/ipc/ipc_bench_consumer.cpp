// ipcheck-bench-ipc's consumer (ipc_bench.cpp holds the command line, the producer and
// main): it receives the producer's exports, registers every benchmark this adapter and its
// floor can run (the others are skipped, with why) and runs them with Google Benchmark
// (ipc_bench_timed.cpp), or, with --counts, runs the gated figures between count markers
// (ipc_bench_counted.cpp). This file: the process, its set-up and the producer's exports.
#include <sys/mman.h>

#include <cstdio>

#include "count_marker.h"
#include "ipc_bench_consumer.hpp"
#include "peer_messages.hpp"

namespace ipcheck::bench::consumer_detail {

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

Consumer::Consumer(Channel& ch, Adapter& a, Floor& floor, Peer& peer, std::string adapter)
    : ch_(ch), a_(a), floor_(floor), peer_(peer), name_(std::move(adapter)) {}

Consumer::~Consumer() {
  while (!owned_.empty()) owned_.pop_back();
  if (control_) ::munmap(control_, 4096);
}

}  // namespace ipcheck::bench::consumer_detail

namespace ipcheck::bench {
namespace {

// Exit status 77: the adapter (or its floor) cannot run here; the reason is on stderr.
constexpr int kSkipped = 77;

}  // namespace

int run_consumer(Args& args) {
  using namespace consumer_detail;
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
