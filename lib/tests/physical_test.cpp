// ipc::physical_memory and virtual ranges in one process: the clauses of SPEC-CLAUSES.md
// "Physical memory" that concern the library's own semantics.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/checks.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"
#include "support/pattern.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
namespace phys = ipcref::ipc::physical_memory;

struct Physical : testing::Test {
  context ctx;
  device dev = ipc_device();
  std::size_t gran = physical_granularity();
  std::size_t bytes = 4 * physical_granularity();
  physical_ref create(bool ipc = true) { return physical_ref(physical_create(ctx, dev, bytes, ipc), ctx); }
  physical_ref open(const handle& h) { return physical_ref(phys::open(h.data(), ctx, dev), ctx); }
  void open_bytes(std::span<const std::byte> data) { physical_ref(phys::open(data, ctx, dev), ctx); }
};

TEST_F(Physical, sycl_phys_roundtrip_in_process) {
  physical_ref pm = create();
  reserved_range here(ctx, bytes);
  here.map(pm.get(), bytes);
  fill_pattern(here.get(), bytes, 5);
  handle h = phys::get(pm.get(), ctx);
  physical_ref opened = open(h);
  reserved_range there(ctx, bytes);
  there.map(opened.get(), bytes);
  EXPECT_EQ(find_mismatch(there.get(), bytes, 5), SIZE_MAX);
  fill_pattern(there.get(), bytes, 6);
  EXPECT_EQ(find_mismatch(here.get(), bytes, 6), SIZE_MAX);
}

TEST_F(Physical, sycl_phys_get_not_enabled) {
  physical_ref pm = create(false);
  EXPECT_TRUE(fails_with([&] { phys::get(pm.get(), ctx); }, errc::invalid, {"sycl.phys.get.not_enabled"}));
}

TEST_F(Physical, sycl_phys_get_aspect) {
  context bare_ctx({bare_device()});
  physical_ref pm(physical_create(bare_ctx, bare_device(), bytes, true), bare_ctx);
  EXPECT_TRUE(fails_with([&] { phys::get(pm.get(), bare_ctx); }, errc::feature_not_supported,
                         {"sycl.phys.get.aspect", "bare"}));
  // A device with IPC memory but not IPC physical memory is refused too.
  context mem_ctx({memory_only_device()});
  physical_ref pm2(physical_create(mem_ctx, memory_only_device(), bytes, true), mem_ctx);
  EXPECT_TRUE(fails_with([&] { phys::get(pm2.get(), mem_ctx); }, errc::feature_not_supported,
                         {"ipc_physical_memory"}));
  // Opening on such a device is refused in the same way.
  physical_ref src = create();
  handle h = phys::get(src.get(), ctx);
  EXPECT_TRUE(fails_with([&] { physical_ref(phys::open(h.data(), mem_ctx, memory_only_device()), mem_ctx); },
                         errc::feature_not_supported, {"ipc_physical_memory"}));
}

TEST_F(Physical, sycl_phys_open_size) {
  physical_ref pm = create();
  handle h = phys::get(pm.get(), ctx);
  const auto b = h.data();
  std::vector<std::byte> longer(b.begin(), b.end());
  longer.push_back(std::byte{0});
  const std::vector<std::byte> huge(1 << 20);
  struct size_case {
    std::span<const std::byte> data;
    const char* count;
  };
  for (const size_case& c : {size_case{{}, "0 bytes"}, size_case{b.first(63), "63 bytes"},
                              size_case{longer, "65 bytes"}, size_case{huge, "1048576 bytes"}}) {
    EXPECT_TRUE(fails_with([&] { open_bytes(c.data); }, errc::invalid, {c.count, "sycl.phys.open.size"}));
  }
  EXPECT_TRUE(open(h));
}

TEST_F(Physical, sycl_phys_open_ctx_dev) {
  physical_ref pm = create();
  handle h = phys::get(pm.get(), ctx);
  context only_ref1({other_device()});
  EXPECT_TRUE(fails_with([&] { physical_ref(phys::open(h.data(), only_ref1, dev), only_ref1); }, errc::invalid,
                         {"not in the context", "sycl.phys.open.ctx_dev"}));
  EXPECT_TRUE(fails_with([&] { physical_ref(physical_create(only_ref1, dev, bytes, true), only_ref1); },
                         errc::invalid, {"not in the context"}));
  // A context that holds the device opens, on another device than the exporter's too.
  physical_ref on_other(phys::open(h.data(), only_ref1, other_device()), only_ref1);
  EXPECT_EQ(physical_size(on_other.get()), bytes);
  RecordProperty("sycl.phys.open.other_device", "opens");
}

TEST_F(Physical, sycl_phys_open_keeps_size) {
  for (std::size_t pages : {1u, 3u, 64u}) {
    bytes = pages * gran;
    physical_ref pm = create();
    handle h = phys::get(pm.get(), ctx);
    physical_ref opened = open(h);
    EXPECT_EQ(physical_size(opened.get()), bytes) << pages << " pages";
    EXPECT_EQ(physical_reference_count(opened.get()), 1u);
  }
}

TEST_F(Physical, sycl_phys_ipc_enabled) {
  physical_ref with = create(true);
  physical_ref without = create(false);
  EXPECT_TRUE(physical_ipc_enabled(with.get()));
  EXPECT_FALSE(physical_ipc_enabled(without.get()));
  handle h = phys::get(with.get(), ctx);
  physical_ref opened = open(h);
  EXPECT_TRUE(physical_ipc_enabled(opened.get()));
  // An opened object is not exported again.
  EXPECT_TRUE(fails_with([&] { phys::get(opened.get(), ctx); }, errc::invalid, {"opened from another process"}));
}

TEST_F(Physical, sycl_phys_close_refcount) {
  physical_ref pm = create();
  reserved_range here(ctx, bytes);
  here.map(pm.get(), bytes);
  fill_pattern(here.get(), bytes, 9);
  handle h = phys::get(pm.get(), ctx);
  physical_mem opened = phys::open(h.data(), ctx, dev);
  physical_retain(opened);
  EXPECT_EQ(physical_reference_count(opened), 2u);
  // Close drops one reference: the retained object stays valid and maps.
  phys::close(opened, ctx);
  EXPECT_EQ(physical_reference_count(opened), 1u);
  EXPECT_EQ(physical_size(opened), bytes);
  {
    reserved_range there(ctx, bytes);
    there.map(opened, bytes);
    EXPECT_EQ(find_mismatch(there.get(), bytes, 9), SIZE_MAX);
  }
  // The last release frees it: every later use is an error, not a use after free.
  physical_release(opened);
  EXPECT_TRUE(fails_with([&] { physical_size(opened); }, errc::invalid, {"not a live physical memory object"}));
  EXPECT_TRUE(fails_with([&] { phys::close(opened, ctx); }, errc::invalid));
  // Closing what was created (not opened) is refused: release it instead.
  EXPECT_TRUE(fails_with([&] { phys::close(pm.get(), ctx); }, errc::invalid, {"physical_release"}));
}

TEST_F(Physical, mapping_outlives_the_objects_reference) {
  physical_ref pm = create();
  handle h = phys::get(pm.get(), ctx);
  physical_ref opened = open(h);
  reserved_range there(ctx, bytes);
  there.map(opened.get(), bytes);
  opened.reset();
  // A mapping holds the memory even after the last reference is dropped (as with CUDA's cuMemRelease).
  there.as<unsigned char>()[0] = 0x3c;
  reserved_range here(ctx, bytes);
  here.map(pm.get(), bytes);
  EXPECT_EQ(here.as<unsigned char>()[0], 0x3c);
}

TEST_F(Physical, ur_phys_open_stale) {
  physical_ref pm = create();
  handle h = phys::get(pm.get(), ctx);
  const std::vector<std::byte> copy(h.data().begin(), h.data().end());
  phys::put(h, ctx);
  EXPECT_FALSE(h.valid());
  EXPECT_TRUE(fails_with([&] { physical_ref(phys::open(copy, ctx, dev), ctx); }, errc::invalid, {"token mismatch"}));
  EXPECT_TRUE(fails_with([&] { phys::put(h, ctx); }, errc::invalid, {"already put"}));
  // Releasing the object revokes its live exports too.
  handle h2 = phys::get(pm.get(), ctx);
  const std::vector<std::byte> copy2(h2.data().begin(), h2.data().end());
  pm.reset();
  EXPECT_TRUE(fails_with([&] { physical_ref(phys::open(copy2, ctx, dev), ctx); }, errc::invalid));
}

TEST_F(Physical, create_arguments) {
  EXPECT_TRUE(fails_with([&] { physical_ref(physical_create(ctx, dev, 0, true), ctx); }, errc::invalid,
                         {"size is 0"}));
  EXPECT_TRUE(fails_with([&] { physical_ref(physical_create(ctx, dev, gran + 1, true), ctx); }, errc::invalid,
                         {"granularity"}));
  int not_an_object = 0;
  auto* bogus = reinterpret_cast<physical_mem>(&not_an_object);
  EXPECT_TRUE(fails_with([&] { physical_retain(bogus); }, errc::invalid));
  EXPECT_TRUE(fails_with([&] { physical_release(bogus); }, errc::invalid));
  EXPECT_TRUE(fails_with([&] { phys::get(bogus, ctx); }, errc::invalid));
  EXPECT_TRUE(fails_with([&] { phys::close(nullptr, ctx); }, errc::invalid));
}

// Misuse of virtual ranges is an error, never a stray mapping.
TEST_F(Physical, virtual_range_misuse) {
  physical_ref pm = create();
  EXPECT_TRUE(fails_with([&] { virtual_reserve(ctx, 0); }, errc::invalid, {"size is 0"}));
  EXPECT_TRUE(fails_with([&] { virtual_reserve(ctx, gran / 2); }, errc::invalid, {"granularity"}));
  reserved_range r(ctx, 2 * bytes);
  char* base = r.as<char>();
  // Not granular: address, size, offset.
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base + 1, gran, pm.get(), 0, access::read_write); }, errc::invalid,
                         {"address"}));
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base, gran + 1, pm.get(), 0, access::read_write); }, errc::invalid,
                         {"size"}));
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base, gran, pm.get(), 1, access::read_write); }, errc::invalid,
                         {"offset"}));
  // Outside the physical object, or empty.
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base, bytes + gran, pm.get(), 0, access::read_write); },
                         errc::invalid, {"outside"}));
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base, gran, pm.get(), bytes, access::read_write); }, errc::invalid,
                         {"outside"}));
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base, 0, pm.get(), 0, access::read_write); }, errc::invalid));
  // Outside the reservation: past its end, or never reserved.
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base + bytes + gran, bytes, pm.get(), 0, access::read_write); },
                         errc::invalid, {"virtual_reserve"}));
  std::vector<char> heap(3 * gran);
  char* unreserved = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(heap.data()) + gran - 1) / gran * gran);
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, unreserved, gran, pm.get(), 0, access::read_write); }, errc::invalid,
                         {"virtual_reserve"}));
  // Another context's reservation.
  context other;
  EXPECT_TRUE(fails_with([&] { virtual_map(other, base, gran, pm.get(), 0, access::read_write); }, errc::invalid,
                         {"another context"}));
  // Overlap with a live mapping.
  virtual_map(ctx, base + gran, 2 * gran, pm.get(), 0, access::read_write);
  EXPECT_TRUE(fails_with([&] { virtual_map(ctx, base, 2 * gran, pm.get(), 0, access::read_write); }, errc::invalid,
                         {"overlaps"}));
  // Unmap: only exactly what was mapped.
  EXPECT_TRUE(fails_with([&] { virtual_unmap(ctx, base, gran); }, errc::invalid, {"not a mapped range"}));
  EXPECT_TRUE(fails_with([&] { virtual_unmap(ctx, base + gran, gran); }, errc::invalid, {"not a mapped range"}));
  virtual_unmap(ctx, base + gran, 2 * gran);
  EXPECT_TRUE(fails_with([&] { virtual_unmap(ctx, base + gran, 2 * gran); }, errc::invalid, {"not a mapped range"}));
  // Free: only a whole reservation, by its exact size.
  EXPECT_TRUE(fails_with([&] { virtual_free(ctx, base, bytes); }, errc::invalid, {"not a range"}));
  EXPECT_TRUE(fails_with([&] { virtual_free(ctx, base + gran, 2 * bytes); }, errc::invalid, {"not a range"}));
  EXPECT_TRUE(fails_with([&] { virtual_free(other, base, 2 * bytes); }, errc::invalid, {"another context"}));
  EXPECT_EQ(get_resource_counts().reservations, 1u);
}

TEST_F(Physical, virtual_map_read_only_is_enforced) {
  physical_ref pm = create();
  reserved_range r(ctx, bytes);
  r.map(pm.get(), bytes, access::read_only);
  EXPECT_EQ(r.as<volatile unsigned char>()[0], 0);
  // A write through a read-only mapping faults.
  EXPECT_DEATH(r.as<volatile unsigned char>()[0] = 1, "");
}

// sycl.phys.map.offset: mapping an (opened) physical object at a non-zero offset shows the
// object's bytes from that offset.
TEST_F(Physical, sycl_phys_map_offset) {
  physical_ref pm = create();
  reserved_range whole(ctx, bytes);
  whole.map(pm.get(), bytes);
  fill_pattern(whole.get(), bytes, 17);
  physical_ref opened = open(phys::get(pm.get(), ctx));
  for (std::size_t offset : {gran, 2 * gran, bytes - gran}) {
    SCOPED_TRACE(offset);
    for (physical_mem which : {pm.get(), opened.get()}) {
      const std::size_t len = bytes - offset;
      reserved_range part(ctx, len);
      virtual_map(ctx, part.get(), len, which, offset, access::read_write);
      EXPECT_EQ(std::memcmp(part.get(), whole.as<char>() + offset, len), 0);
      virtual_unmap(ctx, part.get(), len);
    }
  }
}

}  // namespace
