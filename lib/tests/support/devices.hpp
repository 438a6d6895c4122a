// The device set every test process (and every peer it starts) runs with, and its devices.
#pragma once

#include "ipcref/ipcref.hpp"

namespace ipcref_test {

// Set as IPCHECK_REF_DEVICES by the test main before anything reads the platform:
// two devices with every aspect, one with none, one with only IPC memory.
inline constexpr const char* kTestDevices = "ref0=all;ref1=all;bare=none;memonly=memory";

// The device of that name; throws std::runtime_error when the platform lacks it.
ipcref::device device_named(const char* name);
inline ipcref::device ipc_device() { return device_named("ref0"); }
inline ipcref::device other_device() { return device_named("ref1"); }
inline ipcref::device bare_device() { return device_named("bare"); }
inline ipcref::device memory_only_device() { return device_named("memonly"); }

}  // namespace ipcref_test
