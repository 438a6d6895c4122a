// The floor of each IPC benchmark: the same work done the cheapest way the platform
// allows, measured in the same process and run as the adapter's verbs. `ref` is held
// against raw Linux syscalls, `cuda` against the same driver calls made directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcref/unique_fd.hpp"

namespace ipcheck::bench {

// One export the producer sent: the bytes, and the descriptor that came with them (-1
// when the transport takes descriptors with pidfd_getfd).
struct ExportMsg {
  std::size_t size = 0;
  std::vector<std::byte> bytes;
  ipcref::unique_fd fd;
};

// A floor call failed: the benchmark stops with this message.
class FloorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Floor {
 public:
  virtual ~Floor() = default;

  // "what the floor calls" for each floor benchmark kind (mem_open_close, phys_open_map, ...).
  virtual std::map<std::string, std::string> describe() const = 0;

  // Exporting `own` (an allocation of this process) without the adapter.
  virtual void get(DevPtr own, std::size_t bytes) = 0;
  // Opening and closing a memory export without the adapter.
  virtual std::uint64_t open(const ExportMsg& e) = 0;
  virtual void close(std::uint64_t mapped, const ExportMsg& e) = 0;
  // Open with the one read of the exporter's memory that revocation needs (ref's export
  // proof); false when the adapter has no such floor.
  virtual bool has_proven_open() const { return false; }
  virtual std::uint64_t open_proven(const ExportMsg& e) { return open(e); }
  // First access to every page of an opened mapping, by the floor and by the adapter.
  virtual void touch(std::uint64_t mapped, std::size_t bytes) = 0;
  virtual Outcome adapter_touch(Adapter& a, DevPtr mapped, std::size_t bytes) = 0;
  // Physical memory: open, reserve a range, map, unmap, free the range, close.
  virtual void phys_open_map(const ExportMsg& e) = 0;
};

// The floor for `adapter` (configured like it), or null with `why` when there is none.
std::unique_ptr<Floor> make_floor(const std::string& adapter, const std::map<std::string, std::string>& adapter_options,
                                  std::string& why);

std::unique_ptr<Floor> make_ref_floor();
// `library`: the libcuda to load (the adapter option library=PATH), empty for the default.
std::unique_ptr<Floor> make_cuda_floor(const std::string& library, std::string& why);

}  // namespace ipcheck::bench
