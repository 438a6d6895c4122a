#include "ipcref/errc.hpp"

namespace ipcref {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "ipcref"; }
  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
      case errc::invalid: return "invalid argument or handle";
      case errc::feature_not_supported: return "feature not supported by the device";
      case errc::exporter_gone: return "the exporting process has exited";
      case errc::permission_denied: return "the kernel refused access to the exporter's descriptor";
      case errc::exhausted: return "resources exhausted";
      case errc::timeout: return "timed out";
      case errc::device_lost: return "this process's state is lost";
    }
    return "unknown ipcref error " + std::to_string(v);
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const category instance;
  return instance;
}

std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

const char* errc_name(errc e) noexcept {
  switch (e) {
    case errc::invalid: return "invalid";
    case errc::feature_not_supported: return "feature_not_supported";
    case errc::exporter_gone: return "exporter_gone";
    case errc::permission_denied: return "permission_denied";
    case errc::exhausted: return "exhausted";
    case errc::timeout: return "timeout";
    case errc::device_lost: return "device_lost";
  }
  return "unknown";
}

}  // namespace ipcref
