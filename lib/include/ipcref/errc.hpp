// Error codes of the reference IPC implementation, shaped like SYCL's errc.
#pragma once

#include <string>
#include <system_error>

namespace ipcref {

enum class errc : int {
  invalid = 1,                // bad argument or handle bytes (SYCL errc::invalid)
  feature_not_supported = 2,  // device lacks the aspect (SYCL errc::feature_not_supported)
  exporter_gone = 3,          // the exporting process has exited (or its pid was reused)
  permission_denied = 4,      // the kernel refused to hand over the exporter's descriptor
  exhausted = 5,              // out of export slots, descriptors or memory
  timeout = 6,                // a wait ran out of time
  device_lost = 7,            // this process's state is unusable (a runtime's sticky error)
};

const std::error_category& error_category() noexcept;
std::error_code make_error_code(errc e) noexcept;

// Short stable name of a code ("invalid", "feature_not_supported", ...).
const char* errc_name(errc e) noexcept;

// A refusal reported as a value rather than thrown (the try_ verbs): what the exception
// would carry.
struct refusal {
  errc code = errc::invalid;
  std::string message;
};

// Every failure of the library is thrown as this; code() is in error_category().
class exception : public std::system_error {
 public:
  exception(errc e, const std::string& what) : std::system_error(make_error_code(e), what), message_(what) {}
  errc code_value() const noexcept { return static_cast<errc>(code().value()); }
  // The message alone (system_error would append the category's text).
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace ipcref

template <>
struct std::is_error_code_enum<ipcref::errc> : std::true_type {};
