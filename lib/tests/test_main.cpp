// The lib tests' main: pins the device set before any test reads the platform, so that
// runs are hermetic and the peers (which inherit the environment) see the same devices.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/devices.hpp"

int main(int argc, char** argv) {
  ::setenv("IPCHECK_REF_DEVICES", ipcref_test::kTestDevices, 1);
  ::unsetenv("IPCHECK_REF_CONFIG");
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
