// The cuda adapter without a GPU: its handle record codec, and init's answers when the
// driver is missing, is not libcuda, or is the CUDA toolkit's stub.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "ipcheck/cuda/fd_record.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcheck/adapter.hpp"

namespace ipcheck {
namespace {

using cuda_adapter::FdRecord;

FdRecord sample() {
  FdRecord r;
  r.pid = 4242;
  r.fd = 17;
  r.start_time = 123456789;
  r.size = 2u << 20;
  r.device = 1;
  return r;
}

TEST(FdRecord, RoundTrips) {
  const auto bytes = sample().encode();
  ASSERT_EQ(bytes.size(), FdRecord::kSize);
  std::string why;
  const auto back = FdRecord::decode(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->pid, 4242u);
  EXPECT_EQ(back->fd, 17);
  EXPECT_EQ(back->start_time, 123456789u);
  EXPECT_EQ(back->size, 2u << 20);
  EXPECT_EQ(back->device, 1u);
}

TEST(FdRecord, RejectsWrongSizes) {
  const auto good = sample().encode();
  for (std::size_t n : {std::size_t{0}, good.size() - 1, good.size() + 1, std::size_t{64}}) {
    std::vector<std::byte> b = good;
    b.resize(n, std::byte{0});
    std::string why;
    EXPECT_FALSE(FdRecord::decode(b, why)) << n << " bytes";
    EXPECT_NE(why.find("bytes"), std::string::npos) << why;
  }
}

TEST(FdRecord, RejectsEveryFlippedByte) {
  const auto good = sample().encode();
  for (std::size_t i = 0; i < good.size(); ++i) {
    auto b = good;
    b[i] ^= std::byte{0x01};
    std::string why;
    EXPECT_FALSE(FdRecord::decode(b, why)) << "byte " << i;
    EXPECT_FALSE(why.empty());
  }
}

TEST(FdRecord, RejectsNonPositiveFields) {
  FdRecord r = sample();
  r.fd = -1;
  std::string why;
  EXPECT_FALSE(FdRecord::decode(r.encode(), why));
  EXPECT_NE(why.find("fd -1"), std::string::npos) << why;
  r = sample();
  r.size = 0;
  EXPECT_FALSE(FdRecord::decode(r.encode(), why));
}

TEST(FdRecord, StartTimeNamesLiveProcessesOnly) {
  EXPECT_GT(toolkit::process_start_time(::getpid()), 0u);
  EXPECT_EQ(toolkit::process_start_time(0x3fffffff), 0u);
}

// A put export's number is never handed to a later export of the same process.
TEST(ExportFdNumbers, NumbersClimbAndAreNeverReused) {
  toolkit::ExportFdNumbers numbers;
  std::vector<int> got;
  for (int i = 0; i < 3; ++i) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    ::close(p[1]);
    ipcref::unique_fd fd(p[0]);
    const int before = fd.get();
    ASSERT_EQ(numbers.place(fd), 0);
    EXPECT_NE(::fcntl(fd.get(), F_GETFD), -1);
    EXPECT_EQ(::fcntl(before, F_GETFD), -1) << "the old number stays open";
    got.push_back(fd.get());
  }  // each descriptor closes here, as a put closes it: its number must not come back
  EXPECT_GE(got[0], 64);
  EXPECT_LT(got[0], got[1]);
  EXPECT_LT(got[1], got[2]);
}

std::unique_ptr<Adapter> make_cuda() {
  const AdapterDesc* d = find_adapter("cuda");
  EXPECT_NE(d, nullptr);
  return d ? d->create() : nullptr;
}

TEST(CudaAdapter, ClaimsSyclAndCuda) {
  const AdapterDesc* d = find_adapter("cuda");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->profiles, (std::vector<std::string>{"sycl", "cuda"}));
}

TEST(CudaAdapter, MissingLibraryIsNotImplemented) {
  auto a = make_cuda();
  AdapterConfig c;
  c.options["library"] = "/nonexistent/libcuda.so.1";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_EQ(o.message.rfind("no NVIDIA driver: ", 0), 0u) << o.message;
  EXPECT_NE(o.message.find("/nonexistent/libcuda.so.1"), std::string::npos) << o.message;
}

TEST(CudaAdapter, LibraryWithoutCudaSymbolsIsNotImplemented) {
  auto a = make_cuda();
  AdapterConfig c;
  c.options["library"] = "libc.so.6";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_NE(o.message.find("lacks cuInit"), std::string::npos) << o.message;
}

TEST(CudaAdapter, UnknownOptionIsInvalid) {
  auto a = make_cuda();
  AdapterConfig c;
  c.options["colour"] = "green";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::invalid);
  EXPECT_NE(o.message.find("'colour'"), std::string::npos) << o.message;
}

// connections: the command line checks the value; init sets CUDA_DEVICE_MAX_CONNECTIONS
// before the driver loads: 1 for a process without events unless the user's environment or
// the option says otherwise; a process with events keeps the driver's default (its gated
// records need queues of their own); `driver` leaves the environment as it was.
TEST(CudaAdapter, ConnectionsOptionSetsTheDriversQueueCount) {
  const AdapterDesc* d = find_adapter("cuda");
  ASSERT_NE(d, nullptr);
  for (const char* ok : {"1", "8", "32", "driver"}) EXPECT_EQ(d->check_value("connections", ok), "") << ok;
  for (const char* bad : {"0", "33", "", "x", "-1", "99999999999"})
    EXPECT_EQ(d->check_value("connections", bad), "give driver, or a whole number from 1 to 32") << bad;
  const char* saved = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string restore = saved ? saved : "";
  auto init_with = [](const char* env, const char* option, bool events) {
    if (env) ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", env, 1);
    else ::unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    auto a = make_cuda();
    AdapterConfig c;
    c.events = events;
    c.options["library"] = "/nonexistent/libcuda.so.1";  // init stops at the load, after the setting
    if (option) c.options["connections"] = option;
    (void)a->init(c);
    const char* now = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    return now ? std::string(now) : std::string("(unset)");
  };
  EXPECT_EQ(init_with(nullptr, nullptr, false), "1");
  EXPECT_EQ(init_with(nullptr, nullptr, true), "(unset)") << "a process with events got one shared queue";
  EXPECT_EQ(init_with("4", nullptr, false), "4");
  EXPECT_EQ(init_with("4", nullptr, true), "4");
  EXPECT_EQ(init_with("4", "2", false), "2");
  EXPECT_EQ(init_with(nullptr, "1", true), "1") << "the option is the user's to give";
  EXPECT_EQ(init_with(nullptr, "driver", false), "(unset)");
  EXPECT_EQ(init_with("6", "driver", false), "6");
  if (saved) ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", restore.c_str(), 1);
  else ::unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

// The toolkit's stub exports every driver symbol but answers CUDA_ERROR_STUB_LIBRARY:
// init getting that far proves each symbol the adapter looks up exists under that name.
TEST(CudaAdapter, ToolkitStubResolvesEverySymbolAndSaysItIsAStub) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  auto a = make_cuda();
  AdapterConfig c;
  c.options["library"] = stub;
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_EQ(o.native_name, "CUDA_ERROR_STUB_LIBRARY") << o.describe();
  EXPECT_EQ(o.message.rfind("no NVIDIA driver: ", 0), 0u) << o.message;
}

// Here: no driver (skip reason) or a working one (devices listed); never anything else.
TEST(CudaAdapter, DefaultInitEitherWorksOrSaysWhyNot) {
  auto a = make_cuda();
  const Outcome o = a->init(AdapterConfig{});
  if (o.ok()) {
    const AdapterInfo i = a->info();
    EXPECT_GT(a->device_count(), 0u);
    EXPECT_FALSE(i.driver_version.empty());
    return;
  }
  EXPECT_TRUE(o.code == Errc::not_implemented || o.code == Errc::feature_not_supported) << o.describe();
  EXPECT_TRUE(o.message.rfind("no NVIDIA driver: ", 0) == 0 || o.message.rfind("no CUDA device", 0) == 0) << o.message;
}

}  // namespace
}  // namespace ipcheck
