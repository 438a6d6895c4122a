#include "ipcheck/level_zero_shaped.hpp"

namespace ipcheck::toolkit {

Outcome unknown_object(const std::string& prefix, const char* verb, const char* kind, ObjectId id) {
  return Outcome::failure(Errc::invalid, prefix + verb + ": " + std::to_string(id) + " is not a live " + kind +
                                             " of this adapter (released already?)");
}

Outcome not_a_live_export(const std::string& prefix, const char* verb, ObjectId id) {
  return Outcome::failure(Errc::invalid, prefix + verb + ": export id " + std::to_string(id) + " is not a live export");
}

Outcome created_not_opened(const std::string& prefix, ObjectId id) {
  return Outcome::failure(Errc::invalid, prefix + "phys_close: object " + std::to_string(id) +
                                             " was created here, not opened; release it with phys_release");
}

Outcome no_such_device(const std::string& prefix, int index, std::size_t count) {
  return Outcome::failure(Errc::invalid, prefix + "device index " + std::to_string(index) + " is not one of the " +
                                             std::to_string(count) + " devices");
}

}  // namespace ipcheck::toolkit
