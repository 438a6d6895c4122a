// The two IPC handle conventions (handle_layout.hpp) and external memory descriptors.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "ipcref/record.hpp"
#include "ipcref/unique_fd.hpp"
#include "state.hpp"

namespace zedriver {

using Bytes = std::array<std::byte, ze_ipcheck::kHandleSize>;

Bytes encode_handle(std::span<const std::byte> record) {
  Bytes out{};
  std::memcpy(out.data(), record.data(), out.size());
  if (driver().config.convention == Convention::fd) {
    // The record's own fd field (offset 12) is the exporter's descriptor; it leads the handle.
    const ipcref::record::fields f = ipcref::record::decode(record);
    ze_ipcheck::set_fd(out, f.fd);
  }
  return out;
}

DecodedHandle decode_handle(std::span<const std::byte> bytes, const char* function) {
  DecodedHandle d;
  std::memcpy(d.record.data(), bytes.data(), d.record.size());
  if (driver().config.convention == Convention::opaque) return d;  // the record itself; pidfd_getfd
  d.descriptor = ze_ipcheck::fd_of(bytes);
  if (d.descriptor < 0)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": the handle's descriptor (bytes 0..3) is ", d.descriptor,
             "; with ", ze_ipcheck::kEnvIpcHandle, "=fd the importer writes the descriptor it received by "
             "SCM_RIGHTS there"));
  // Restore the implied magic so that ipcref checks the record as it was exported.
  const std::uint32_t magic = ipcref::record::magic;
  for (int i = 0; i < 4; ++i) d.record[static_cast<std::size_t>(i)] = static_cast<std::byte>((magic >> (8 * i)) & 0xff);
  return d;
}

Export make_export(ipcref::handle h, const Context& c) {
  Export e;
  e.handle = std::move(h);
  e.bytes = encode_handle(e.handle.data());
  e.ctx_id = c.ctx->id();
  return e;
}

void check_fd_types(ze_external_memory_type_flags_t flags, const char* function, const char* what) {
  if (flags == 0 || (flags & ~kFdTypes) != 0)
    fail(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION,
         cat(function, ": ", what, " flags ", flags, " are not supported; libze_ipcheck exports and imports ",
             "ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF or _OPAQUE_FD descriptors"));
}

namespace {
constexpr unsigned kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
}

int make_external_descriptor(ze_ipcheck::ExternalKind kind, std::span<const std::byte> record, const char* function) {
  ze_ipcheck::ExternalDescriptor e{};
  e.magic = ze_ipcheck::kExternalMagic;
  e.version = ze_ipcheck::kExternalVersion;
  e.kind = static_cast<std::uint32_t>(kind);
  std::memcpy(e.record.data(), record.data(), e.record.size());
  ipcref::unique_fd fd(::memfd_create("ze_ipcheck-external-memory", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, cat(function, ": memfd_create failed: ", std::strerror(errno)));
  if (::pwrite(fd.get(), &e, sizeof e, 0) != static_cast<ssize_t>(sizeof e) ||
      ::fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0)
    fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, cat(function, ": cannot write an external descriptor: ", std::strerror(errno)));
  return fd.release();
}

std::array<std::byte, ze_ipcheck::kHandleSize> read_external_descriptor(int fd, ze_ipcheck::ExternalKind kind,
                                                                       const char* function) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || static_cast<unsigned>(seals) != kSeals)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": descriptor ", fd, " is not an external memory descriptor of libze_ipcheck (",
             seals < 0 ? std::string(std::strerror(errno)) : std::string("not sealed as one"),
             "); pass the fd from ze_external_memory_export_fd_t"));
  ze_ipcheck::ExternalDescriptor e{};
  if (::pread(fd, &e, sizeof e, 0) != static_cast<ssize_t>(sizeof e) || e.magic != ze_ipcheck::kExternalMagic ||
      e.version != ze_ipcheck::kExternalVersion)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": descriptor ", fd, " does not hold a version ", ze_ipcheck::kExternalVersion,
             " external memory descriptor"));
  if (e.kind != static_cast<std::uint32_t>(kind))
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": descriptor ", fd, " describes ",
             e.kind == static_cast<std::uint32_t>(ze_ipcheck::ExternalKind::memory) ? "a memory allocation"
                                                                                  : "physical memory",
             ", not what this call imports"));
  std::array<std::byte, ze_ipcheck::kHandleSize> out{};
  std::memcpy(out.data(), e.record.data(), out.size());
  return out;
}

}  // namespace zedriver
