#include "devices.hpp"

#include <stdexcept>
#include <string>

namespace ipcref_test {

ipcref::device device_named(const char* name) {
  for (const ipcref::device& d : ipcref::get_devices())
    if (d.name() == name) return d;
  throw std::runtime_error(std::string("no device '") + name + "' (devices from " +
                           ipcref::device_config_source() + "; the test main sets IPCHECK_REF_DEVICES)");
}

}  // namespace ipcref_test
