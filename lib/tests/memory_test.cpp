// ipc::memory in one process (the reference opens its own exports): the clauses of
// SPEC-CLAUSES.md "Memory" that concern the library's own semantics.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/checks.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"
#include "support/pattern.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
namespace mem = ipcref::ipc::memory;

constexpr std::size_t kBytes = 3 * 4096 + 100;

struct Memory : testing::Test {
  context ctx;
  device dev = ipc_device();
  usm_ptr alloc(std::size_t bytes = kBytes, std::uint64_t seed = 1) {
    usm_ptr p(malloc_device(bytes, dev, ctx), ctx);
    fill_pattern(p.get(), bytes, seed);
    return p;
  }
  opened_ptr open(const handle& h) { return opened_ptr(mem::open(h.data(), ctx, dev), ctx); }
};

TEST_F(Memory, sycl_mem_roundtrip) {
  usm_ptr a = alloc(kBytes, 11);
  handle h = mem::get(a.get(), ctx);
  ASSERT_TRUE(h.valid());
  EXPECT_EQ(h.data().size(), record::size);
  EXPECT_GE(h.descriptor(), 0);
  opened_ptr o = open(h);
  ASSERT_TRUE(o);
  // Zero copy both ways: the opener reads the exporter's bytes and the exporter sees the opener's.
  EXPECT_NE(o.get(), a.get());
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 11), SIZE_MAX);
  fill_pattern(o.get(), kBytes, 12);
  EXPECT_EQ(find_mismatch(a.get(), kBytes, 12), SIZE_MAX);
  const pointer_info info = get_pointer_info(o.get(), ctx);
  EXPECT_TRUE(info.imported);
  EXPECT_EQ(info.size, kBytes);
  EXPECT_EQ(info.base, o.get());
  RecordProperty("cuda.mem.open.self", "opens");  // observation: ref opens its own exports
}

TEST_F(Memory, sycl_mem_get_aspect) {
  context bare_ctx({bare_device()});
  usm_ptr a(malloc_device(4096, bare_device(), bare_ctx), bare_ctx);
  EXPECT_TRUE(fails_with([&] { mem::get(a.get(), bare_ctx); }, errc::feature_not_supported,
                         {"sycl.mem.get.aspect", "bare", "ipc_memory"}));
}

TEST_F(Memory, sycl_mem_open_aspect) {
  usm_ptr a = alloc();
  handle h = mem::get(a.get(), ctx);
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(h.data(), ctx, bare_device()), ctx); },
                         errc::feature_not_supported, {"sycl.mem.open.aspect", "bare"}));
  // A device outside the context is an invalid argument, whatever its aspects.
  context only_ref1({other_device()});
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(h.data(), only_ref1, dev), only_ref1); }, errc::invalid,
                         {"not in the context"}));
  // The device of the opener need not be the exporter's (sycl.phys.open.other_device is O for memory too).
  opened_ptr o(mem::open(h.data(), ctx, other_device()), ctx);
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 1), SIZE_MAX);
}

TEST_F(Memory, sycl_mem_open_size) {
  usm_ptr a = alloc();
  handle h = mem::get(a.get(), ctx);
  const auto b = h.data();
  std::vector<std::byte> longer(b.begin(), b.end());
  longer.push_back(std::byte{0});
  std::vector<std::byte> huge(1 << 20);
  std::copy(b.begin(), b.end(), huge.begin());
  struct size_case {
    std::span<const std::byte> data;
    const char* count;
  };
  for (const size_case& c : {size_case{{}, "0 bytes"}, size_case{b.first(63), "63 bytes"},
                              size_case{longer, "65 bytes"}, size_case{huge, "1048576 bytes"}}) {
    EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(c.data, ctx, dev), ctx); }, errc::invalid,
                           {c.count, "expected 64", "sycl.mem.open.size"}));
  }
  // The intact bytes still open: nothing above consumed the export.
  EXPECT_TRUE(open(h));
}

TEST_F(Memory, sycl_mem_open_repeat) {
  usm_ptr a = alloc(kBytes, 21);
  handle h = mem::get(a.get(), ctx);
  std::vector<opened_ptr> opens;
  for (int i = 0; i < 16; ++i) opens.push_back(open(h));
  EXPECT_EQ(get_resource_counts().open_mappings, 16u);
  // Closing one leaves every other open valid (asked of the registry before touching memory).
  opens[5].reset();
  for (std::size_t i = 0; i < opens.size(); ++i) {
    if (opens[i]) {
      ASSERT_NO_THROW(get_pointer_info(opens[i].get(), ctx)) << "open " << i << " was closed with open 5";
    }
  }
  for (std::size_t i = 0; i < opens.size(); ++i) {
    if (opens[i]) {
      EXPECT_EQ(find_mismatch(opens[i].get(), kBytes, 21), SIZE_MAX) << "open " << i;
    }
  }
  // Each open needs its own close: closing one pointer twice is an error.
  void* first = opens[0].release();
  mem::close(first, ctx);
  EXPECT_TRUE(fails_with([&] { mem::close(first, ctx); }, errc::invalid, {"rb.close.double"}));
  for (auto& o : opens) o.reset();
  EXPECT_EQ(get_resource_counts().open_mappings, 0u);
  RecordProperty("sycl.mem.open.repeat_pointer", "unique");
}

TEST_F(Memory, ze_mem_open_unique) {
  usm_ptr a = alloc(kBytes, 31);
  handle h = mem::get(a.get(), ctx);
  std::vector<opened_ptr> opens;
  std::set<void*> seen;
  for (int i = 0; i < 8; ++i) {
    opens.push_back(open(h));
    EXPECT_TRUE(seen.insert(opens.back().get()).second) << "open " << i << " returned a pointer seen before";
  }
  // Distinct pointers, one memory: a write through one shows through all.
  opens[3].as<unsigned char>()[kBytes - 1] = 0xa5;
  for (auto& o : opens) EXPECT_EQ(o.as<unsigned char>()[kBytes - 1], 0xa5);
  EXPECT_EQ(a.as<unsigned char>()[kBytes - 1], 0xa5);
}

TEST_F(Memory, sycl_mem_put_keeps_open) {
  usm_ptr a = alloc(kBytes, 41);
  handle h = mem::get(a.get(), ctx);
  opened_ptr o = open(h);
  mem::put(h, ctx);
  EXPECT_FALSE(h.valid());
  EXPECT_EQ(h.descriptor(), -1);
  // Still valid after put, both ways, and still needs its close.
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 41), SIZE_MAX);
  fill_pattern(a.get(), kBytes, 42);
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 42), SIZE_MAX);
  EXPECT_EQ(get_resource_counts().open_mappings, 1u);
  EXPECT_NO_THROW(o.reset());
}

TEST_F(Memory, rb_put_revokes) {
  usm_ptr a = alloc();
  handle h = mem::get(a.get(), ctx);
  const record::bytes copy = [&] {
    record::bytes b{};
    std::copy(h.data().begin(), h.data().end(), b.begin());
    return b;
  }();
  const std::size_t exports = get_resource_counts().live_exports;
  mem::put(h, ctx);
  EXPECT_EQ(get_resource_counts().live_exports, exports - 1);
  // The same bytes no longer open (sycl.mem.put.then_open is O; ref revokes).
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(copy, ctx, dev), ctx); }, errc::invalid, {"rb.put.revokes"}));
  RecordProperty("sycl.mem.put.then_open", "invalid");
  // Putting twice is an error, as is putting a handle that never came from get.
  EXPECT_TRUE(fails_with([&] { mem::put(h, ctx); }, errc::invalid, {"already put"}));
  handle never;
  EXPECT_TRUE(fails_with([&] { mem::put(never, ctx); }, errc::invalid));
  // A new get exports again.
  handle again = mem::get(a.get(), ctx);
  EXPECT_TRUE(open(again));
}

TEST_F(Memory, rb_put_revokes_only_that_export) {
  usm_ptr a = alloc(kBytes, 51);
  handle h1 = mem::get(a.get(), ctx);
  handle h2 = mem::get(a.get(), ctx);
  EXPECT_FALSE(std::equal(h1.data().begin(), h1.data().end(), h2.data().begin())) << "two exports, same bytes";
  mem::put(h1, ctx);
  opened_ptr o = open(h2);
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 51), SIZE_MAX);
}

TEST_F(Memory, sycl_mem_get_non_device) {
  usm_ptr host(malloc_host(4096, ctx), ctx);
  EXPECT_TRUE(fails_with([&] { mem::get(host.get(), ctx); }, errc::invalid, {"host", "sycl.mem.get.non_device"}));
  RecordProperty("sycl.mem.get.non_device.host", "invalid");
  // Shared allocations are memfd-backed in ref and export like device ones.
  usm_ptr shared(malloc_shared(kBytes, dev, ctx), ctx);
  fill_pattern(shared.get(), kBytes, 61);
  handle h = mem::get(shared.get(), ctx);
  opened_ptr o = open(h);
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 61), SIZE_MAX);
  EXPECT_EQ(get_pointer_info(shared.get(), ctx).kind, usm_kind::shared);
  RecordProperty("sycl.mem.get.non_device.shared", "exportable");
}

TEST_F(Memory, sycl_mem_get_interior) {
  usm_ptr a = alloc(kBytes, 71);
  // Ref exports the range from the interior pointer to the end (an offset handle), not the base.
  const std::size_t at = 4096 + 13;
  handle h = mem::get(a.as<char>() + at, ctx);
  const record::fields f = record::decode(h.data());
  EXPECT_EQ(f.offset, at);
  EXPECT_EQ(f.size, kBytes - at);
  opened_ptr o = open(h);
  const auto* whole = a.as<unsigned char>();
  EXPECT_EQ(std::memcmp(o.get(), whole + at, kBytes - at), 0);
  EXPECT_EQ(get_pointer_info(o.get(), ctx).size, kBytes - at);
  o.as<unsigned char>()[0] = static_cast<unsigned char>(~whole[at]);
  EXPECT_EQ(o.as<unsigned char>()[0], whole[at]);
  RecordProperty("sycl.mem.get.interior", "offset handle");
}

TEST_F(Memory, get_rejects_what_is_not_an_allocation) {
  int on_stack = 0;
  EXPECT_TRUE(fails_with([&] { mem::get(&on_stack, ctx); }, errc::invalid, {"not memory allocated"}));
  usm_ptr a = alloc();
  context other;
  EXPECT_TRUE(fails_with([&] { mem::get(a.get(), other); }, errc::invalid, {"another context"}));
  handle h = mem::get(a.get(), ctx);
  opened_ptr o = open(h);
  // Imported memory is not exported again.
  EXPECT_TRUE(fails_with([&] { mem::get(o.get(), ctx); }, errc::invalid, {"opened from another process"}));
  EXPECT_TRUE(fails_with([&] { ipcref::free(o.get(), ctx); }, errc::invalid, {"ipc::memory::close"}));
  EXPECT_TRUE(fails_with([&] { mem::close(o.get(), other); }, errc::invalid, {"another context"}));
}

TEST_F(Memory, rb_close_double) {
  usm_ptr a = alloc();
  handle h = mem::get(a.get(), ctx);
  void* p = mem::open(h.data(), ctx, dev);
  mem::close(p, ctx);
  EXPECT_TRUE(fails_with([&] { mem::close(p, ctx); }, errc::invalid, {"rb.close.double"}));
  // Never opened: the process's own allocation, a stack address, null.
  EXPECT_TRUE(fails_with([&] { mem::close(a.get(), ctx); }, errc::invalid, {"free it instead"}));
  int on_stack = 0;
  EXPECT_TRUE(fails_with([&] { mem::close(&on_stack, ctx); }, errc::invalid, {"rb.close.double"}));
  EXPECT_TRUE(fails_with([&] { mem::close(nullptr, ctx); }, errc::invalid, {"rb.close.double"}));
  // Freeing twice is the same kind of error.
  void* raw = a.release();
  ipcref::free(raw, ctx);
  EXPECT_TRUE(fails_with([&] { ipcref::free(raw, ctx); }, errc::invalid, {"not the start of an allocation"}));
}

TEST_F(Memory, rb_open_after_free) {
  usm_ptr a = alloc();
  handle h = mem::get(a.get(), ctx);
  const std::vector<std::byte> copy(h.data().begin(), h.data().end());
  a.reset();
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(copy, ctx, dev), ctx); }, errc::invalid));
  // Also when the descriptor number was reused by a new allocation of the same size.
  usm_ptr b = alloc(kBytes, 2);
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(copy, ctx, dev), ctx); }, errc::invalid, {"token mismatch"}));
  EXPECT_EQ(get_resource_counts().open_mappings, 0u);
}

// try_open refuses exactly what open throws, with the same code and message, and opens what
// open opens.
TEST_F(Memory, try_open_answers_what_open_throws) {
  usm_ptr a = alloc(kBytes, 61);
  handle h = mem::get(a.get(), ctx);
  const std::vector<std::byte> good(h.data().begin(), h.data().end());
  handle revoked = mem::get(a.get(), ctx);
  const std::vector<std::byte> put_bytes(revoked.data().begin(), revoked.data().end());
  mem::put(revoked, ctx);
  std::vector<std::byte> forged = good;
  forged[20] ^= std::byte{0x40};
  struct refused_case {
    const char* what;
    std::span<const std::byte> data;
    device on;
  };
  const refused_case cases[] = {{"63 bytes", std::span(good).first(63), dev},
                                {"a forged byte", forged, dev},
                                {"a put export", put_bytes, dev},
                                {"a device without ipc_memory", good, bare_device()}};
  const std::size_t mappings = get_resource_counts().open_mappings;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    refusal why;
    EXPECT_EQ(mem::try_open(c.data, ctx, c.on, {}, why), nullptr);
    try {
      opened_ptr(mem::open(c.data, ctx, c.on), ctx);
      ADD_FAILURE() << "open did not throw";
    } catch (const exception& e) {
      EXPECT_EQ(why.code, e.code_value());
      EXPECT_EQ(why.message, e.what());
    }
  }
  EXPECT_EQ(get_resource_counts().open_mappings, mappings);
  refusal why;
  opened_ptr o(mem::try_open(good, ctx, dev, {}, why), ctx);
  ASSERT_TRUE(o) << why.message;
  EXPECT_NE(o.get(), a.get());
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 61), SIZE_MAX);
  EXPECT_EQ(get_resource_counts().open_mappings, mappings + 1);
}

TEST_F(Memory, rb_realloc_fresh) {
  // The consumer keeps each round's mapping while the producer frees and reallocates, so
  // that the new export reuses the freed descriptor number (and often the address): a
  // cache keyed by those would hand back the old memory.
  opened_ptr previous;
  for (std::uint64_t round = 0; round < 8; ++round) {
    SCOPED_TRACE(round);
    usm_ptr a = alloc(kBytes, 100 + round);
    handle h = mem::get(a.get(), ctx);
    opened_ptr o = open(h);
    EXPECT_NE(o.get(), previous.get());
    EXPECT_EQ(find_mismatch(o.get(), kBytes, 100 + round), SIZE_MAX);
    // The previous round's mapping still shows the previous (freed) allocation.
    if (previous) {
      EXPECT_EQ(find_mismatch(previous.get(), kBytes, 100 + round - 1), SIZE_MAX);
    }
    previous = std::move(o);
  }
}

TEST_F(Memory, open_options_descriptor_in_process) {
  usm_ptr a = alloc(kBytes, 81);
  handle h = mem::get(a.get(), ctx);
  open_options opts;
  opts.descriptor = h.descriptor();
  opened_ptr o(mem::open(h.data(), ctx, dev, opts), ctx);
  EXPECT_EQ(find_mismatch(o.get(), kBytes, 81), SIZE_MAX);
  // The descriptor is borrowed: still open afterwards.
  EXPECT_NE(::fcntl(h.descriptor(), F_GETFD), -1);
  // A descriptor that is not the exported object is refused.
  usm_ptr b = alloc();
  handle hb = mem::get(b.get(), ctx);
  opts.descriptor = hb.descriptor();
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(h.data(), ctx, dev, opts), ctx); }, errc::invalid,
                         {"token mismatch"}));
  opts.descriptor = 0;  // stdin: not an ipcref object
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(h.data(), ctx, dev, opts), ctx); }, errc::invalid,
                         {"not an exported memory object"}));
  opts.descriptor = 1 << 20;
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(h.data(), ctx, dev, opts), ctx); }, errc::invalid,
                         {"unusable"}));
}

TEST_F(Memory, allocation_arguments) {
  EXPECT_TRUE(fails_with([&] { usm_ptr(malloc_device(0, dev, ctx), ctx); }, errc::invalid, {"size is 0"}));
  EXPECT_TRUE(fails_with([&] { usm_ptr(malloc_device(1ull << 47, dev, ctx), ctx); }, errc::exhausted));
  context only_ref1({other_device()});
  EXPECT_TRUE(fails_with([&] { usm_ptr(malloc_device(64, dev, only_ref1), only_ref1); }, errc::invalid,
                         {"not in the context"}));
  usm_ptr a = alloc(100);
  const pointer_info info = get_pointer_info(a.as<char>() + 50, ctx);
  EXPECT_EQ(info.kind, usm_kind::device);
  EXPECT_EQ(info.base, a.get());
  EXPECT_EQ(info.size, 100u);
  EXPECT_FALSE(info.imported);
  EXPECT_TRUE(fails_with([&] { get_pointer_info(a.as<char>() + 100, ctx); }, errc::invalid));
}

}  // namespace
