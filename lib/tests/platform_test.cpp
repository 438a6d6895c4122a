// Device configuration (IPCHECK_REF_DEVICES, IPCHECK_REF_CONFIG) and its error messages.
// The platform is parsed once per process, so each case asks a fresh ipcref_peer.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ipcref/unique_fd.hpp"
#include "support/peer_process.hpp"

namespace {

using namespace ipcref_test;

constexpr const char* kAllAspects = "ipc_memory,ipc_physical_memory,ipc_event";

// The peer's view of the platform: "source|name:aspects;..." or the error's code and message.
peer_reply platform_with(std::vector<std::string> env, std::vector<int> inherit = {}) {
  // Start from neither variable, then apply the case's.
  env.insert(env.begin(), {"IPCHECK_REF_DEVICES", "IPCHECK_REF_CONFIG"});
  peer_process p({env, inherit});
  return p.call(op::platform);
}

// A configuration file that exists only as a memfd: no temporary file to clean up.
class config_file {
 public:
  explicit config_file(const std::string& text) : fd_(::memfd_create("ipcref-test-config", MFD_CLOEXEC)) {
    if (!fd_ || ::write(fd_.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      throw std::runtime_error("cannot write a memfd config");
  }
  int fd() const noexcept { return fd_.get(); }
  // The path as the peer sees it: it inherits the descriptor under the same number.
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }

 private:
  ipcref::unique_fd fd_;
};

TEST(Platform, default_devices) {
  const peer_reply r = platform_with({});
  ASSERT_TRUE(r.ok()) << r.text();
  EXPECT_EQ(r.text(), std::string("default|ref0:") + kAllAspects + ";ref1:" + kAllAspects + ";");
  // An empty variable counts as unset.
  const peer_reply e = platform_with({"IPCHECK_REF_DEVICES="});
  ASSERT_TRUE(e.ok()) << e.text();
  EXPECT_EQ(e.text(), r.text());
}

TEST(Platform, devices_variable) {
  const std::string value = " gpu0 = memory , event ; gpu1=none;; gpu2=all;gpu3=physical_memory,;gpu4=";
  const peer_reply r = platform_with({"IPCHECK_REF_DEVICES=" + value});
  ASSERT_TRUE(r.ok()) << r.text();
  EXPECT_EQ(r.text(), "IPCHECK_REF_DEVICES=" + value + "|gpu0:ipc_memory,ipc_event;gpu1:;gpu2:" + kAllAspects +
                          ";gpu3:ipc_physical_memory;gpu4:;");
}

TEST(Platform, devices_variable_errors) {
  struct bad {
    std::string value;
    std::vector<std::string> mentions;
  };
  const std::vector<bad> cases = {
      {"gpu0", {"IPCHECK_REF_DEVICES", "'gpu0'", "has no '='", "name=aspects"}},
      {"gpu0=memory;=event", {"IPCHECK_REF_DEVICES", "'=event'", "empty name"}},
      {"gpu0=memory,gpus", {"IPCHECK_REF_DEVICES", "device 'gpu0'", "unknown aspect 'gpus'", "known aspects"}},
      {"a=all;b=none;a=memory", {"IPCHECK_REF_DEVICES=", "'a'", "used twice"}},
      {" ; ;", {"no devices configured"}},
  };
  for (const bad& c : cases) {
    SCOPED_TRACE(c.value);
    const peer_reply r = platform_with({"IPCHECK_REF_DEVICES=" + c.value});
    ASSERT_FALSE(r.ok()) << r.text();
    EXPECT_EQ(r.code(), ipcref::errc::invalid);
    for (const std::string& m : c.mentions) EXPECT_NE(r.text().find(m), std::string::npos) << r.text();
  }
}

// A configuration error reaches every use of the platform, not only the first.
TEST(Platform, error_reaches_every_caller) {
  peer_process p({{"IPCHECK_REF_CONFIG", "IPCHECK_REF_DEVICES=x=bogus"}, {}});
  for (int i = 0; i < 2; ++i) {
    const peer_reply r = p.call(op::platform);  // the peer itself asks twice and compares
    EXPECT_EQ(r.code(), ipcref::errc::invalid) << r.text();
    EXPECT_NE(r.text().find("unknown aspect 'bogus'"), std::string::npos) << r.text();
  }
  const peer_reply alloc = p.call(op::alloc, 1, 4096, 0);
  EXPECT_EQ(alloc.code(), ipcref::errc::invalid) << alloc.text();
  EXPECT_NE(alloc.text().find("unknown aspect 'bogus'"), std::string::npos) << alloc.text();
}

TEST(Platform, config_file) {
  const config_file cfg(
      "# devices for the test\n"
      "\n"
      "alpha = memory, event   # trailing comment\n"
      "   beta=none\n"
      "gamma = all\n");
  const peer_reply r = platform_with({"IPCHECK_REF_CONFIG=" + cfg.path()}, {cfg.fd()});
  ASSERT_TRUE(r.ok()) << r.text();
  EXPECT_EQ(r.text(), cfg.path() + "|alpha:ipc_memory,ipc_event;beta:;gamma:" + kAllAspects + ";");
}

TEST(Platform, config_file_errors) {
  struct bad {
    std::string text;
    std::vector<std::string> mentions;  // ":N" is appended to the path
  };
  const std::vector<bad> cases = {
      {"a=all\n# fine\nb memory\n", {":3: device entry 'b memory' has no '='"}},
      {"a=all\nb=memory,telepathy\n", {":2: device 'b' names unknown aspect 'telepathy'"}},
      {"# nothing\n\n", {"no devices configured"}},
      {"a=all\na=all\n", {"device name 'a' is used twice"}},
  };
  for (const bad& c : cases) {
    SCOPED_TRACE(c.text);
    const config_file cfg(c.text);
    const peer_reply r = platform_with({"IPCHECK_REF_CONFIG=" + cfg.path()}, {cfg.fd()});
    ASSERT_FALSE(r.ok()) << r.text();
    EXPECT_EQ(r.code(), ipcref::errc::invalid);
    EXPECT_NE(r.text().find(cfg.path()), std::string::npos) << r.text();
    for (const std::string& m : c.mentions) EXPECT_NE(r.text().find(m), std::string::npos) << r.text();
  }
  const peer_reply missing = platform_with({"IPCHECK_REF_CONFIG=/nonexistent/ipcref.conf"});
  EXPECT_EQ(missing.code(), ipcref::errc::invalid) << missing.text();
  for (const char* m : {"cannot read '/nonexistent/ipcref.conf'", "No such file", "name = aspects"})
    EXPECT_NE(missing.text().find(m), std::string::npos) << missing.text();
  // A directory opens but cannot be read: a read error, not an empty configuration.
  const peer_reply directory = platform_with({"IPCHECK_REF_CONFIG=/"});
  EXPECT_EQ(directory.code(), ipcref::errc::invalid) << directory.text();
  for (const char* m : {"cannot read '/'", "Is a directory"})
    EXPECT_NE(directory.text().find(m), std::string::npos) << directory.text();
}

// IPCHECK_REF_DEVICES wins over IPCHECK_REF_CONFIG.
TEST(Platform, devices_variable_overrides_config) {
  const config_file cfg("fromfile=all\n");
  const peer_reply r =
      platform_with({"IPCHECK_REF_CONFIG=" + cfg.path(), "IPCHECK_REF_DEVICES=fromenv=memory"}, {cfg.fd()});
  ASSERT_TRUE(r.ok()) << r.text();
  EXPECT_EQ(r.text(), "IPCHECK_REF_DEVICES=fromenv=memory|fromenv:ipc_memory;");
}

}  // namespace
