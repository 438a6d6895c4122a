// The vk adapter's own tests: its record, and (where lavapipe is installed) that the
// validation layer's verdict reaches an outcome while a correct import stays clean.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ipcheck/adapter.hpp"
#include "vk_record.hpp"

namespace ipcheck {
namespace {

using vk::FdRecord;

constexpr const char* kLavapipe = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

FdRecord sample() {
  FdRecord r;
  r.pid = 1234;
  r.fd = 77;
  r.start_time = 99;
  r.size = 8192;
  r.memory_type = 1;
  r.handle_type = 1;
  r.flags = FdRecord::dedicated;
  r.buffer_size = 8000;
  r.ino = 42;
  r.dev = 7;
  return r;
}

TEST(VkRecord, RoundTrips) {
  const auto bytes = sample().encode();
  ASSERT_EQ(bytes.size(), FdRecord::kSize);
  std::string why;
  const auto back = FdRecord::decode(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->size, 8192u);
  EXPECT_EQ(back->buffer_size, 8000u);
  EXPECT_EQ(back->ino, 42u);
  EXPECT_EQ(back->flags, static_cast<std::uint32_t>(FdRecord::dedicated));
}

TEST(VkRecord, RefusesEditsAndSizes) {
  auto bytes = sample().encode();
  std::string why;
  bytes[33] ^= std::byte{1};  // the size, without a new checksum
  EXPECT_FALSE(FdRecord::decode(bytes, why));
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
  bytes = sample().encode();
  EXPECT_FALSE(FdRecord::decode(std::span(bytes).first(FdRecord::kSize - 1), why));
  EXPECT_NE(why.find("95 bytes"), std::string::npos) << why;
}

std::string hex(std::span<const std::byte> b) {
  std::string s;
  char x[4];
  for (std::byte v : b) {
    std::snprintf(x, sizeof x, "%02x", static_cast<unsigned>(v));
    s += x;
  }
  return s;
}

// An adapter on lavapipe, or a skip saying why not.
std::unique_ptr<Adapter> lavapipe(bool validation, std::string& why) {
  if (!std::filesystem::exists(kLavapipe)) {
    why = std::string("no lavapipe ICD at ") + kLavapipe;
    return nullptr;
  }
  ::setenv("VK_ICD_FILENAMES", kLavapipe, 1);
  const AdapterDesc* d = find_adapter("vk");
  if (!d) {
    why = "no vk adapter in this build";
    return nullptr;
  }
  auto a = d->create();
  AdapterConfig c;
  if (validation) c.options["validation"] = "1";
  const Outcome o = a->init(c);
  if (!o.ok()) {
    why = o.describe();
    return nullptr;
  }
  return a;
}

// Imports `e` through native mem_import with `change`; returns the outcome.
Outcome import_with(Adapter& a, const Exported& e, std::map<std::string, std::string> change) {
  const int fd = ::fcntl(e.fd, F_DUPFD_CLOEXEC, 0);
  change["record"] = hex(e.bytes);
  change["fd"] = std::to_string(fd);
  Outcome o = a.native("mem_import", change);
  if (!o.ok() && ::fcntl(fd, F_GETFD) >= 0) ::close(fd);
  return o;
}

TEST(VkAdapter, ValidationFailsAnInvalidCallAndNotACorrectOne) {
  std::string why;
  auto a = lavapipe(true, why);
  if (!a) GTEST_SKIP() << why;
  auto mem = a->alloc(0, 4096, MemKind::device);
  ASSERT_TRUE(mem.ok()) << mem.outcome.describe();
  auto e = a->mem_get(mem.value);
  ASSERT_TRUE(e.ok()) << e.outcome.describe();
  ASSERT_GE(e.value.fd, 0);
  // A correct import: no validation message, the runtime's success.
  const Outcome good = import_with(*a, e.value, {});
  EXPECT_TRUE(good.ok()) << good.describe();
  EXPECT_TRUE(good.from_runtime());
  // allocationSize 0 is invalid usage: the layer's error fails the call, decided by the runtime.
  const Outcome bad = import_with(*a, e.value, {{"size", "=0"}});
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.from_runtime());
  EXPECT_EQ(bad.call, "vkAllocateMemory");
  EXPECT_NE(bad.message.find("VUID"), std::string::npos) << bad.describe();
  EXPECT_TRUE(a->mem_put(e.value.id).ok());
  EXPECT_TRUE(a->free(mem.value).ok());
}

TEST(VkAdapter, RecordChecksAreTheAdaptersOwn) {
  std::string why;
  auto a = lavapipe(false, why);
  if (!a) GTEST_SKIP() << why;
  auto mem = a->alloc(0, 4096, MemKind::device);
  ASSERT_TRUE(mem.ok()) << mem.outcome.describe();
  auto e = a->mem_get(mem.value);
  ASSERT_TRUE(e.ok()) << e.outcome.describe();
  // Truncated bytes never reach Vulkan.
  auto r = a->mem_open(std::span(e.value.bytes).first(10), e.value.fd, 0, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.outcome.code, Errc::invalid);
  EXPECT_FALSE(r.outcome.from_runtime());
  // A descriptor that is not the exported file is refused before the driver sees it.
  const int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  r = a->mem_open(e.value.bytes, other, 0, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.outcome.from_runtime());
  ::close(other);
  // The real thing opens, through the runtime.
  r = a->mem_open(e.value.bytes, e.value.fd, 0, 0);
  ASSERT_TRUE(r.ok()) << r.outcome.describe();
  EXPECT_TRUE(r.outcome.from_runtime());
  EXPECT_TRUE(a->mem_close(r.value).ok());
  EXPECT_TRUE(a->mem_put(e.value.id).ok());
  EXPECT_TRUE(a->free(mem.value).ok());
}

}  // namespace
}  // namespace ipcheck
