// `ipcheck fuzz --export-c`: a CUDA fuzz finding as a standalone C program. The program
// repeats the campaign's set-up (ipcheck.fuzz-setup/1: the same allocations in the same
// order, each filled with its own pattern, the same exports, after the same warm-up calls),
// takes a fresh handle of the export the finding derived from, applies the finding's
// changes (literals, or values of the new run: another export's bytes, a pid), opens it in
// a separate consumer process and judges the mapping as ipcheck's oracle does.
#include "export_c.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "ipcheck_version.h"
#include "protocol.hpp"
#include "targets.hpp"

namespace ipcheck::fuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What a finding says, wherever it was read from.
struct Finding {
  std::string id;
  std::string outcome;   // the oracle's verdict name
  std::string detail;    // what the campaign saw ("" when only a reproducer was given)
  std::string adapter;
  std::string driver;    // driver version it was found on
  std::string layout;    // handle layout the campaign used
  std::string target = "memory";  // which handles the campaign fuzzed (--target)
  std::string from;      // where it was read
  Symbolic input;
  bool has_input = false;
};

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read '" + path + "'");
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw std::invalid_argument("'" + path + "' is not JSON: " + e.what());
  }
}

// The inverse of describe() (symbolic.hpp) for what a fuzz section's "mutation" holds, so
// that a results.json whose reproducer files were not kept (a committed baseline) still
// exports. Tail bytes are not in the text: an extended input needs its .repro.
Symbolic parse_mutation(const std::string& text, const HandleLayout& layout) {
  Symbolic s;
  s.length = layout.size;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find("; ", at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    at = end + 2;
    if (part.empty() || part == "unchanged" || part == "checksum left stale") continue;
    if (part.rfind("from ", 0) == 0) {
      s.base = part.substr(5);
    } else if (part.rfind("descriptor of ", 0) == 0) {
      s.descriptor = part.substr(14);
    } else if (part == "checksum resealed") {
      s.resealed = true;
    } else if (part.rfind("truncated to ", 0) == 0) {
      s.length = std::stoul(part.substr(13));
    } else if (part.rfind("extended by ", 0) == 0) {
      throw std::invalid_argument("the mutation '" + text + "' extends the handle; the bytes added are only in the "
                                  "finding's .repro file: export that file");
    } else if (const auto eq = part.find(" := "); eq != std::string::npos) {
      FieldChange c;
      c.field = part.substr(0, eq);
      std::string v = part.substr(eq + 4);
      if (const auto paren = v.find(" ("); paren != std::string::npos && v.back() == ')') {
        c.source = v.substr(0, paren);
        v = v.substr(paren + 2, v.size() - paren - 3);
      }
      try {
        c.value = std::stoull(v, nullptr, 0);
      } catch (const std::exception&) {
        throw std::invalid_argument("the mutation '" + text + "' has a value ipcheck cannot read: '" + v + "'");
      }
      s.changes.push_back(c);
    } else {
      throw std::invalid_argument("the mutation '" + text + "' has a part ipcheck cannot read: '" + part + "'");
    }
  }
  if (s.base.empty()) throw std::invalid_argument("the mutation '" + text + "' names no export it came from");
  return s;
}

Finding from_repro(const json& doc, const std::string& path) {
  Finding f;
  f.from = path;
  f.id = fs::path(path).stem().string();
  f.adapter = doc.value("adapter", "");
  f.driver = doc.value("driver", "");
  f.layout = doc.value("handle_layout", "");
  f.target = doc.value("target", "memory");
  f.outcome = doc.value("expect", "");
  if (doc.value("setup", "") != detail::kSetup)
    throw std::invalid_argument("'" + path + "' was made with set-up \"" + doc.value("setup", "") + "\"; this ipcheck writes \"" +
                                detail::kSetup + "\": export it with the ipcheck that found it");
  f.input = symbolic_from_json(doc.at("input"));
  f.has_input = true;
  // The finding's description beside it says what the campaign saw.
  const fs::path described = fs::path(path).replace_extension(".json");
  if (fs::exists(described)) {
    try {
      const json d = read_json_file(described.string());
      f.id = d.value("id", f.id);
      f.detail = d.value("detail", "");
      if (f.outcome.empty()) f.outcome = d.value("outcome", "");
    } catch (const std::invalid_argument&) {
    }
  }
  return f;
}

Finding from_description(const json& d, const std::string& path) {
  Finding f;
  f.from = path;
  f.id = d.value("id", fs::path(path).stem().string());
  f.outcome = d.value("outcome", "");
  f.detail = d.value("detail", "");
  f.adapter = d.value("adapter", "");
  f.target = d.value("target", "memory");
  f.driver = d.contains("driver") && d["driver"].is_object() ? d["driver"].value("version", "") : "";
  f.layout = d.value("handle_layout", "");
  if (d.contains("input") && d["input"].is_object()) {
    f.input = symbolic_from_json(d["input"]);
    f.has_input = true;
  }
  return f;
}

Finding from_file(const std::string& path) {
  const json doc = read_json_file(path);
  const std::string schema = doc.value("schema", "");
  if (schema == "ipcheck.fuzz-repro/1") return from_repro(doc, path);
  if (schema == "ipcheck.fuzz-finding/1") return from_description(doc, path);
  throw std::invalid_argument("'" + path + "' is neither a reproducer (ipcheck.fuzz-repro/1) nor a finding "
                              "(ipcheck.fuzz-finding/1): its schema is \"" + schema + "\"");
}

Finding from_results(const std::string& id, const std::string& results) {
  const json doc = read_json_file(results);
  if (!doc.contains("fuzz") || !doc["fuzz"].is_object() || !doc["fuzz"].contains("findings"))
    throw std::invalid_argument("'" + results + "' has no fuzz section; give the results.json of a campaign "
                                "(ipcheck fuzz --out DIR, or a run with --results)");
  const json& fz = doc["fuzz"];
  std::string ids;
  for (const auto& x : fz["findings"]) {
    ids += (ids.empty() ? "" : ", ") + x.value("id", std::string());
    if (x.value("id", "") != id) continue;
    // The reproducer beside the results, when it was kept, is exact (tail bytes included).
    if (x.contains("reproducer") && x["reproducer"].is_string()) {
      const fs::path repro = fs::path(results).parent_path() / x["reproducer"].get<std::string>();
      if (fs::exists(repro)) {
        Finding f = from_file(repro.string());
        f.id = id;
        f.outcome = x.value("outcome", f.outcome);
        f.detail = x.value("detail", f.detail);
        return f;
      }
    }
    Finding f;
    f.from = results + " (fuzz finding " + id + ")";
    f.id = id;
    f.outcome = x.value("outcome", "");
    f.detail = x.value("detail", "");
    f.adapter = fz.value("adapter", "");
    f.driver = fz.contains("driver") ? fz["driver"].value("version", "") : "";
    f.layout = fz.contains("handle_layout") ? fz["handle_layout"].value("name", "") : "";
    // The section's title names the target: "memory handles (cuda)", "event handles (cuda)".
    const std::string title = fz.value("target", "memory handles");
    f.target = title.rfind("physical", 0) == 0 ? "physical" : title.rfind("event", 0) == 0 ? "event" : "memory";
    const std::string mutation = x.value("mutation", "");
    if (!mutation.empty()) {
      f.input = parse_mutation(mutation, layout_for(f.layout, 64));
      f.has_input = true;
    }
    return f;
  }
  throw std::invalid_argument("'" + results + "' has no fuzz finding '" + id + "'; its findings: " +
                              (ids.empty() ? std::string("none") : ids));
}

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\%03o", c);
      out += b;
    } else if (ch == '?') {
      out += "\\?";  // no trigraphs
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Text for a C comment: no comment end inside it.
std::string comment_text(std::string s) {
  for (std::size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "* /");
  return s;
}

std::string wrap(const std::string& text, const std::string& prefix) {
  std::string out, line = prefix;
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (line.size() > prefix.size() && line.size() + 1 + w.size() > 96) {
      out += line + "\n";
      line = prefix;
    }
    line += (line.size() > prefix.size() ? " " : "") + w;
  }
  return out + line + "\n";
}

const char* kind_code(MemKind k) {
  switch (k) {
    case MemKind::device: return "KIND_DEVICE";
    case MemKind::host: return "KIND_HOST";
    case MemKind::shared: return "KIND_SHARED";
  }
  return "KIND_DEVICE";
}

std::string alloc_table(const std::vector<detail::AllocSpec>& specs, const std::string& who) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    // CUDA has no put: the campaign's "revoked" export stays live, one more export.
    std::vector<std::uint64_t> offsets = s.revoked ? std::vector<std::uint64_t>{0} : s.exports;
    std::string offs;
    for (std::size_t e = 0; e < 4; ++e) offs += (e ? ", " : "") + std::to_string(e < offsets.size() ? offsets[e] : 0);
    out += "    {" + c_string(who + ".alloc[" + std::to_string(i) + "]") + ", " + std::to_string(s.bytes) + ", " +
           kind_code(s.kind) + ", " + std::to_string(s.device) + ", " + (s.decoy ? "1" : "0") + ", " +
           std::to_string(offsets.size()) + ", {" + offs + "}},\n";
  }
  return out;
}

// "producer.export[3]" -> (0, 3); "worker.export[0]" -> (1, 0); anything else -> (-1, -1).
std::pair<int, int> export_name(const std::string& name) {
  for (const auto& [prefix, side] : {std::pair<std::string, int>{"producer.export[", 0}, {"worker.export[", 1}})
    if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() + 1 && name.back() == ']') {
      const std::string n = name.substr(prefix.size(), name.size() - prefix.size() - 1);
      if (n.find_first_not_of("0123456789") == std::string::npos) return {side, std::stoi(n)};
    }
  return {-1, -1};
}

// What the program does, for its opening comment.
std::string memory_program_text(const std::string& base) {
  return "What it does: a producer process (fork, no exec) makes the allocations of the campaign's set-up "
         "(ipcheck.fuzz-setup/1) with cuMemAlloc, in the same order and after the same warm-up calls, fills "
         "each with its own pattern (the 8-byte word at offset o is salt + o) and exports some with "
         "cuIpcGetMemHandle; the others are decoys that are never exported. It passes its handles to the "
         "parent through a pipe. A consumer process makes its own export and decoy, opens each unchanged "
         "handle once (as the campaign's workers do), then takes a fresh handle of " + base +
         ", applies the finding's changes (below, as data: the handle embeds pids and ids, so values taken "
         "from the campaign's live processes are taken from this run's), opens it with "
         "cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) and judges it: the open must fail, or map "
         "an export whose pattern reads back in full with cuMemcpyDtoH; then cuIpcCloseMemHandle, and a read "
         "of the consumer's own allocation must still work (its context is alive).";
}

std::string event_program_text(const std::string& base) {
  return "What it does: a producer process (fork, no exec) creates the events of the campaign's set-up "
         "(ipcheck.fuzz-setup/1, --target event) with cuEventCreate(CU_EVENT_INTERPROCESS | "
         "CU_EVENT_DISABLE_TIMING), in the same order and after the same warm-up calls, and exports some with "
         "cuIpcGetEventHandle; those it records on an idle stream, so they complete. The others are decoys, "
         "never exported, recorded behind a stream wait on a host word that is never written, so they stay "
         "pending. It passes its handles to the parent through a pipe. A consumer process makes its own "
         "events (all pending), takes a fresh handle of " + base +
         ", applies the finding's changes (below, as data), opens it with cuIpcOpenEventHandle and judges it: "
         "the open must fail, or give an event that is complete (every live export is); a pending event is "
         "one this consumer was never given. Then cuEventDestroy, and the consumer's own event must still "
         "answer cuEventQuery (its context is alive).";
}

// The set-up tables of the program, as C.
std::string alloc_tables() {
  std::ostringstream c;
  c << "struct alloc_spec {\n  const char *name;\n  size_t bytes;\n  int kind;\n  int device;  /* the last device when fewer exist */\n"
    << "  int decoy;   /* never exported */\n  int n_exports;\n  uint64_t offsets[4];  /* exported at these offsets */\n};\n"
    << "/* The campaign's set-up, in its order (CUDA has no put: every export stays live). */\n"
    << "static const struct alloc_spec producer_allocs[] = {\n" << alloc_table(detail::producer_setup(), "producer") << "};\n"
    << "static const struct alloc_spec worker_allocs[] = {\n" << alloc_table(detail::consumer_setup(), "worker") << "};\n"
    << "#define N_PRODUCER_ALLOCS " << detail::producer_setup().size() << "\n"
    << "#define N_WORKER_ALLOCS " << detail::consumer_setup().size() << "\n";
  return c.str();
}

std::string event_table(const std::vector<detail::EventSpec>& specs, const std::string& who) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i)
    out += "    {\"" + who + ".alloc[" + std::to_string(i) + "]\", " + (specs[i].decoy ? "1" : "0") + "},\n";
  return out;
}

std::string event_tables() {
  std::ostringstream c;
  c << "struct event_spec {\n  const char *name;\n  int decoy;  /* never exported */\n};\n"
    << "/* The campaign's events, in its order (CUDA has no put: the export put in the campaign's\n"
    << "   set-up stays live, as it did there). */\n"
    << "static const struct event_spec producer_events[] = {\n" << event_table(detail::producer_event_setup(), "producer") << "};\n"
    << "static const struct event_spec worker_events[] = {\n" << event_table(detail::consumer_event_setup(), "worker") << "};\n"
    << "#define N_PRODUCER_EVENTS " << detail::producer_event_setup().size() << "\n"
    << "#define N_WORKER_EVENTS " << detail::consumer_event_setup().size() << "\n"
    ;
  return c.str();
}

const char* kBody =
R"c_body(/* ---- CUDA driver API, declared here (no CUDA headers needed) ---------------------- */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUevent;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct { unsigned char reserved[64]; } CUipcMemHandle;
typedef struct { unsigned char reserved[64]; } CUipcEventHandle;
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1u
#define CU_MEM_ATTACH_GLOBAL 0x1u
#define CU_EVENT_DISABLE_TIMING 0x2u
#define CU_EVENT_INTERPROCESS 0x4u
#define CU_STREAM_NON_BLOCKING 0x1u
#define CU_STREAM_WAIT_VALUE_GEQ 0x0u
#define CU_MEMHOSTALLOC_DEVICEMAP 0x2u
#define CUDA_ERROR_NOT_READY 600

static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemAllocHost_v2)(void **, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
  CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr *, CUipcMemHandle, unsigned);
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUresult (*cuIpcGetEventHandle)(CUipcEventHandle *, CUevent);
#if TARGET_EVENT
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuIpcOpenEventHandle)(CUevent *, CUipcEventHandle);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamWaitValue32_v2)(CUstream, CUdeviceptr, uint32_t, unsigned);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr *, void *, unsigned);
#endif
} cu;

static const char *role = "main";
static char error_text[512];

static const char *err_name(CUresult r) {
  const char *name = NULL;
  static char buf[32];
  if (cu.cuGetErrorName && cu.cuGetErrorName(r, &name) == 0 && name) return name;
  snprintf(buf, sizeof buf, "CUresult %d", r);
  return buf;
}

/* Records the first failure of a set-up step; returns 0 on failure, 1 on success. */
static int ok(const char *what, CUresult r) {
  if (r == 0) return 1;
  if (!error_text[0]) snprintf(error_text, sizeof error_text, "%s: %s answered %s", role, what, err_name(r));
  return 0;
}

static int load_cuda(void) {
  const char *path = getenv("REPRO_LIBCUDA");
  void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(error_text, sizeof error_text, "%s: cannot load %s: %s", role, path && *path ? path : "libcuda.so.1", dlerror());
    return 0;
  }
#define LOAD(name)                                                                                 \
  do {                                                                                             \
    *(void **)(&cu.name) = dlsym(lib, #name);                                                      \
    if (!cu.name) {                                                                                \
      snprintf(error_text, sizeof error_text, "%s: the driver library has no %s", role, #name);  \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)
  LOAD(cuGetErrorName); LOAD(cuInit); LOAD(cuDeviceGetCount); LOAD(cuDeviceGet);
  LOAD(cuDevicePrimaryCtxRetain); LOAD(cuCtxSetCurrent); LOAD(cuCtxSynchronize);
  LOAD(cuMemAlloc_v2); LOAD(cuMemAllocManaged); LOAD(cuMemAllocHost_v2); LOAD(cuMemFree_v2);
  LOAD(cuMemFreeHost); LOAD(cuMemcpyHtoD_v2); LOAD(cuMemcpyDtoH_v2); LOAD(cuIpcGetMemHandle);
  LOAD(cuIpcOpenMemHandle_v2); LOAD(cuIpcCloseMemHandle); LOAD(cuEventCreate); LOAD(cuEventRecord);
  LOAD(cuEventSynchronize); LOAD(cuEventDestroy_v2); LOAD(cuIpcGetEventHandle);
#if TARGET_EVENT
  LOAD(cuEventQuery); LOAD(cuIpcOpenEventHandle); LOAD(cuStreamCreate); LOAD(cuStreamWaitValue32_v2);
  LOAD(cuMemHostAlloc); LOAD(cuMemHostGetDevicePointer_v2);
#endif
#undef LOAD
  return 1;
}

/* ---- canaries: the 8-byte word at allocation offset o is salt + o (little-endian) --- */
static uint64_t load64(const unsigned char *p, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
static void store64(unsigned char *p, int width, uint64_t v) {
  for (int i = 0; i < width; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
#if !TARGET_EVENT
static uint64_t salt_of(int side, int index) {
  return (0x5ca1ab1e00000000ull ^ ((uint64_t)(side * 16 + index + 1) << 40)) & ~7ull;
}
static void fill_canary(uint64_t salt, unsigned char *out, size_t bytes) {
  for (size_t b = 0; b < bytes; ++b) out[b] = (unsigned char)((salt + (b & ~(size_t)7)) >> (8 * (b & 7)));
}
#endif

/* ---- the allocations of both roles, as the campaign makes them ---------------------- */
#define MAX_ALLOCS 16
#define MAX_EXPORTS 16
#if !TARGET_EVENT
struct range { uint64_t offset, size; };
struct alloc_state {
  const char *name;
  uint64_t salt, size;
  int decoy;
  int n_live;
  struct range live[8];
};
#endif
struct producer_report {  /* producer -> parent, one write */
  int ok;
  int pid;
  int n_exports;
  int export_alloc[MAX_EXPORTS];
  uint64_t export_offset[MAX_EXPORTS];
  unsigned char handles[MAX_EXPORTS][64];
  int exported[MAX_ALLOCS];  /* 1: the allocation has a live export */
  char error[512];
};
struct shared_page {  /* consumer -> parent */
  volatile int stage;  /* 0 set-up, 1 in the open (OPEN_CALL), 2 judging, 3 done */
  volatile int verdict;
  char detail[1024];
};

static CUcontext contexts[8];
static int device_count;

static int init_cuda(void) {
  if (!load_cuda()) return 0;
  if (!ok("cuInit(0)", cu.cuInit(0))) return 0;
  if (!ok("cuDeviceGetCount", cu.cuDeviceGetCount(&device_count))) return 0;
  if (device_count <= 0) {
    snprintf(error_text, sizeof error_text, "%s: no CUDA device", role);
    return 0;
  }
  if (device_count > 8) device_count = 8;
  for (int i = 0; i < device_count; ++i) {
    CUdevice d;
    if (!ok("cuDeviceGet", cu.cuDeviceGet(&d, i))) return 0;
    if (!ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(&contexts[i], d))) return 0;
  }
  if (!ok("cuCtxSetCurrent(device 0)", cu.cuCtxSetCurrent(contexts[0]))) return 0;
  /* The campaign's processes run each kind of call once before their set-up (ipcheck's
     cuda adapter warm-up), so that allocations land where they landed in the campaign. */
  unsigned char bytes[4096];
  memset(bytes, 0x5a, sizeof bytes);
  CUdeviceptr p = 0;
  if (cu.cuMemAlloc_v2(&p, sizeof bytes) == 0) {
    CUipcMemHandle h;
    cu.cuMemcpyHtoD_v2(p, bytes, sizeof bytes);
    cu.cuMemcpyDtoH_v2(bytes, p, sizeof bytes);
    cu.cuIpcGetMemHandle(&h, p);
    if (!ok("cuCtxSynchronize after the warm-up's device memory", cu.cuCtxSynchronize())) return 0;
    cu.cuMemFree_v2(p);
  }
  void *host = NULL;
  if (cu.cuMemAllocHost_v2(&host, sizeof bytes) == 0) cu.cuMemFreeHost(host);
  CUevent ev = NULL;
  if (cu.cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) == 0) {
    CUipcEventHandle eh;
    cu.cuIpcGetEventHandle(&eh, ev);
    cu.cuEventRecord(ev, NULL);
    cu.cuEventSynchronize(ev);
    cu.cuEventDestroy_v2(ev);
  }
  return ok("cuCtxSynchronize after the warm-up", cu.cuCtxSynchronize());
}

#if !TARGET_EVENT
/* Allocates and fills one role's set-up; exports as the campaign does. */
static int build_setup(const struct alloc_spec *specs, int n, int side, CUdeviceptr *ptrs, struct alloc_state *table,
                       struct producer_report *exports) {
  for (int i = 0; i < n; ++i) {
    const struct alloc_spec *s = &specs[i];
    int device = s->device < device_count ? s->device : device_count - 1;
    char what[160];
    if (!ok("cuCtxSetCurrent", cu.cuCtxSetCurrent(contexts[device]))) return 0;
    snprintf(what, sizeof what, "allocating %s (%zu bytes)", s->name, s->bytes);
    if (s->kind == KIND_SHARED) {
      if (!ok(what, cu.cuMemAllocManaged(&ptrs[i], s->bytes, CU_MEM_ATTACH_GLOBAL))) return 0;
    } else if (s->kind == KIND_HOST) {
      void *h = NULL;
      if (!ok(what, cu.cuMemAllocHost_v2(&h, s->bytes))) return 0;
      ptrs[i] = (CUdeviceptr)(uintptr_t)h;
    } else if (!ok(what, cu.cuMemAlloc_v2(&ptrs[i], s->bytes))) {
      return 0;
    }
    table[i].name = s->name;
    table[i].salt = salt_of(side, i);
    table[i].size = s->bytes;
    table[i].decoy = s->decoy;
    table[i].n_live = 0;
    unsigned char *fill = malloc(s->bytes);
    if (!fill) return 0;
    fill_canary(table[i].salt, fill, s->bytes);
    snprintf(what, sizeof what, "filling %s", s->name);
    int filled = ok(what, cu.cuMemcpyHtoD_v2(ptrs[i], fill, s->bytes)) && ok(what, cu.cuCtxSynchronize());
    free(fill);
    if (!filled) return 0;
    for (int e = 0; e < s->n_exports; ++e) {
      CUipcMemHandle h;
      CUresult r = cu.cuIpcGetMemHandle(&h, ptrs[i] + s->offsets[e]);
      if (r != 0 && s->kind != KIND_DEVICE) {  /* CUDA exports no managed memory: one more decoy */
        printf("[%s] %s is not exported: cuIpcGetMemHandle answered %s (a decoy, as in the campaign)\n", role, s->name,
               err_name(r));
        table[i].decoy = 1;
        break;
      }
      snprintf(what, sizeof what, "cuIpcGetMemHandle(%s + %llu)", s->name, (unsigned long long)s->offsets[e]);
      if (!ok(what, r)) return 0;
      int k = exports->n_exports++;
      exports->export_alloc[k] = i;
      exports->export_offset[k] = s->offsets[e];
      memcpy(exports->handles[k], h.reserved, 64);
      exports->exported[i] = 1;
      uint64_t size = s->bytes - s->offsets[e];
      if (SIZE_FIELD_OFFSET >= 0) size = load64(h.reserved + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH);
      table[i].live[table[i].n_live].offset = s->offsets[e];
      table[i].live[table[i].n_live++].size = size;
    }
  }
  return ok("cuCtxSetCurrent(device 0)", cu.cuCtxSetCurrent(contexts[0]));
}

/* ---- the producer: exports, reports, then keeps everything alive until told ------- */
static int producer_main(int report_fd, int stop_fd) {
  role = "producer";
  static struct producer_report rep;
  static CUdeviceptr ptrs[MAX_ALLOCS];
  static struct alloc_state table[MAX_ALLOCS];
  memset(&rep, 0, sizeof rep);
  rep.pid = (int)getpid();
  rep.ok = init_cuda() && build_setup(producer_allocs, N_PRODUCER_ALLOCS, 0, ptrs, table, &rep);
  if (!rep.ok) snprintf(rep.error, sizeof rep.error, "%s", error_text);
  for (int i = 0; rep.ok && i < N_PRODUCER_ALLOCS; ++i)
    printf("[producer] %-20s %6zu bytes at %#llx%s\n", producer_allocs[i].name, producer_allocs[i].bytes,
           (unsigned long long)ptrs[i], table[i].decoy ? "  (never exported)" : "");
  fflush(stdout);
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 2;
  char c;
  while (read(stop_fd, &c, 1) > 0) {
  }
  _exit(0);  /* the allocations die with the process */
}
#else
/* ---- events: complete, or pending behind a gate the host never opens --------------- */
static uint32_t *gate_host;
static CUdeviceptr gate_dev;

static int make_gates(void) {
  void *host = NULL;
  if (!ok("cuMemHostAlloc(4096 bytes, CU_MEMHOSTALLOC_DEVICEMAP) for the event gates",
          cu.cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP)))
    return 0;
  memset(host, 0, 4096);
  gate_host = host;
  return ok("cuMemHostGetDevicePointer for the event gates", cu.cuMemHostGetDevicePointer_v2(&gate_dev, host, 0));
}

/* One role's events, in the campaign's order: exported unless decoys. With `complete_live`
   (the producer) a live export is recorded on an idle stream and completes; every other
   event is recorded on its own stream behind a wait for a gate word that stays 0, so it
   stays pending, as ipcheck's cuda adapter makes every IPC event until it is signaled. */
static int build_events(const struct event_spec *specs, int n, int complete_live, CUevent *events,
                        struct producer_report *exports) {
  for (int i = 0; i < n; ++i) {
    char what[160];
    snprintf(what, sizeof what, "cuEventCreate(%s, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)", specs[i].name);
    if (!ok(what, cu.cuEventCreate(&events[i], CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING))) return 0;
    if (!specs[i].decoy) {
      CUipcEventHandle h;
      snprintf(what, sizeof what, "cuIpcGetEventHandle(%s)", specs[i].name);
      if (!ok(what, cu.cuIpcGetEventHandle(&h, events[i]))) return 0;
      int k = exports->n_exports++;
      exports->export_alloc[k] = i;
      exports->export_offset[k] = 0;
      memcpy(exports->handles[k], h.reserved, 64);
      exports->exported[i] = 1;
    }
    if (complete_live && !specs[i].decoy) {
      snprintf(what, sizeof what, "cuEventRecord(%s) on an idle stream", specs[i].name);
      /* cuEventSynchronize, not cuCtxSynchronize: the context also holds the gated streams. */
      if (!ok(what, cu.cuEventRecord(events[i], NULL)) || !ok("cuEventSynchronize", cu.cuEventSynchronize(events[i]))) return 0;
      continue;
    }
    CUstream stream;
    if (!ok("cuStreamCreate(CU_STREAM_NON_BLOCKING) for a gate", cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))) return 0;
    if (!ok("cuStreamWaitValue32 on a gate",
            cu.cuStreamWaitValue32_v2(stream, gate_dev + 4 * (CUdeviceptr)i, 1, CU_STREAM_WAIT_VALUE_GEQ)))
      return 0;
    snprintf(what, sizeof what, "cuEventRecord(%s) behind its gate", specs[i].name);
    if (!ok(what, cu.cuEventRecord(events[i], stream))) return 0;
  }
  return 1;
}

/* ---- the producer: exports, reports, then keeps everything alive until told ------- */
static int producer_main(int report_fd, int stop_fd) {
  role = "producer";
  static struct producer_report rep;
  static CUevent events[MAX_ALLOCS];
  memset(&rep, 0, sizeof rep);
  rep.pid = (int)getpid();
  rep.ok = init_cuda() && make_gates() && build_events(producer_events, N_PRODUCER_EVENTS, 1, events, &rep);
  if (!rep.ok) snprintf(rep.error, sizeof rep.error, "%s", error_text);
  for (int i = 0; rep.ok && i < N_PRODUCER_EVENTS; ++i)
    printf("[producer] %-20s %s\n", producer_events[i].name,
           producer_events[i].decoy ? "pending, never exported" : "exported, complete");
  fflush(stdout);
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 2;
  char c;
  while (read(stop_fd, &c, 1) > 0) {
  }
  if (gate_host)
    for (int i = 0; i < 1024; ++i) gate_host[i] = 1;  /* the pending records may run before the events go */
  _exit(0);
}
#endif

/* ---- the consumer: the open and the oracle ---------------------------------------- */
enum verdict { V_REJECTED, V_MAPPED, V_CRASH, V_HANG, V_FD_LEAK, V_MAPPING_LEAK, V_CONFUSED_DEPUTY, V_STALE_EXPORT,
               V_WRONG_OFFSET, V_WRONG_SIZE, V_UNKNOWN_MAPPING, V_CORRUPT_MAPPING, V_UNREADABLE_MAPPING,
               V_CLOSE_FAILED, V_CONTEXT_LOST, V_SETUP_ERROR };
static const char *verdict_names[] = {"rejected", "mapped", "crash", "hang", "fd_leak", "mapping_leak",
                                      "confused_deputy", "stale_export", "wrong_offset", "wrong_size",
                                      "unknown_mapping", "corrupt_mapping", "unreadable_mapping", "close_failed",
                                      "context_lost", "setup error"};

static struct producer_report from_producer;
static struct shared_page *page;
static pid_t dead_pid;
#if !TARGET_EVENT
static struct alloc_state table[2 * MAX_ALLOCS];
static int table_size;
#endif

static int lowest_free_fd(void) {
  int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  return fd;
}

#if !TARGET_EVENT
/* Which allocation, from which offset, holds the 32 bytes read at `address`. */
static int identify(CUdeviceptr address, const unsigned char *head, uint64_t *offset) {
  int k = (int)((8 - (address & 7)) & 7);
  uint64_t w0 = load64(head + k, 8), w1 = load64(head + k + 8, 8);
  for (int i = 0; i < table_size; ++i) {
    uint64_t o = w0 - table[i].salt;
    if (o < table[i].size && o % 8 == 0 && w1 == w0 + 8 && o >= (uint64_t)k) {
      *offset = o - (uint64_t)k;
      return i;
    }
  }
  return -1;
}

static int judge(CUdeviceptr address, const unsigned char *handle, char *detail, size_t n) {
  unsigned char head[32];
  CUresult r = cu.cuMemcpyDtoH_v2(head, address, sizeof head);
  if (r != 0) {
    snprintf(detail, n, "cuIpcOpenMemHandle succeeded and returned %#llx, but cuMemcpyDtoH of its first 32 bytes answered %s",
             (unsigned long long)address, err_name(r));
    return V_UNREADABLE_MAPPING;
  }
  uint64_t offset = 0;
  int a = identify(address, head, &offset);
  if (a < 0) {
    snprintf(detail, n, "the mapping at %#llx holds no allocation's pattern (first 8 bytes %#llx)",
             (unsigned long long)address, (unsigned long long)load64(head, 8));
    return V_UNKNOWN_MAPPING;
  }
  if (table[a].decoy) {
    snprintf(detail, n, "the mapping holds %s from offset %llu: an allocation the producer never exported",
             table[a].name, (unsigned long long)offset);
    return V_CONFUSED_DEPUTY;
  }
  const struct range *e = NULL;
  for (int i = 0; i < table[a].n_live; ++i)
    if (table[a].live[i].offset == offset) e = &table[a].live[i];
  if (!e) {
    snprintf(detail, n, "the mapping holds %s from offset %llu, where no export starts", table[a].name,
             (unsigned long long)offset);
    return V_WRONG_OFFSET;
  }
  if (SIZE_FIELD_OFFSET >= 0) {
    uint64_t claimed = load64(handle + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH);
    if (claimed != e->size) {
      snprintf(detail, n, "the mapping holds %s from offset %llu (an export of %llu bytes) for a handle claiming %llu bytes",
               table[a].name, (unsigned long long)offset, (unsigned long long)e->size, (unsigned long long)claimed);
      return V_WRONG_SIZE;
    }
  }
  unsigned char *got = malloc(e->size), *want = malloc(e->size + offset);
  if (!got || !want) {
    free(got);
    free(want);
    snprintf(detail, n, "out of host memory");
    return V_SETUP_ERROR;
  }
  int v = V_MAPPED;
  r = cu.cuMemcpyDtoH_v2(got, address, e->size);
  if (r != 0) {
    snprintf(detail, n, "the mapping holds %s from offset %llu, but cuMemcpyDtoH of the export's %llu bytes answered %s",
             table[a].name, (unsigned long long)offset, (unsigned long long)e->size, err_name(r));
    v = V_WRONG_SIZE;
  } else {
    fill_canary(table[a].salt, want, e->size + offset);
    for (uint64_t b = 0; b < e->size; ++b)
      if (got[b] != want[offset + b]) {
        snprintf(detail, n, "the mapping holds %s from offset %llu, but byte %llu of %llu differs from its pattern",
                 table[a].name, (unsigned long long)offset, (unsigned long long)b, (unsigned long long)e->size);
        v = V_CORRUPT_MAPPING;
        break;
      }
    if (v == V_MAPPED)
      snprintf(detail, n, "the mapping holds %s from offset %llu, all %llu bytes of the export", table[a].name,
               (unsigned long long)offset, (unsigned long long)e->size);
  }
  free(got);
  free(want);
  return v;
}

#endif

static void print_handle(const char *label, const unsigned char *h) {
  printf("[consumer] %-8s", label);
  for (int i = 0; i < 64; ++i) printf("%s%02x", i % 8 ? "" : " ", h[i]);
  printf("\n");
}

/* The input: a fresh handle of BASE_NAME with the finding's changes; 0 (and the page says
   why) when the set-up lacks an export a change takes its value from. */
static int apply_patches(const struct producer_report *own, const unsigned char *base, unsigned char *input) {
  memcpy(input, base, 64);
  for (const struct patch *c = patches; c->offset >= 0; ++c) {
    uint64_t v = c->literal;
    if (c->source == SRC_PRODUCER_EXPORT || c->source == SRC_WORKER_EXPORT) {
      const int count = c->source == SRC_PRODUCER_EXPORT ? from_producer.n_exports : own->n_exports;
      if (c->source_index >= count) {
        snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no export #%d for %s", c->source_index, c->what);
        page->verdict = V_SETUP_ERROR;
        return 0;
      }
      const unsigned char *src = c->source == SRC_PRODUCER_EXPORT ? from_producer.handles[c->source_index]
                                                                  : own->handles[c->source_index];
      v = load64(src + c->source_offset, c->source_width);
    } else if (c->source == SRC_PRODUCER_PID) {
      v = (uint64_t)from_producer.pid;
    } else if (c->source == SRC_WORKER_PID) {
      v = (uint64_t)getpid();
    } else if (c->source == SRC_DEAD_PID) {
      v = (uint64_t)dead_pid;
    }
    store64(input + c->offset, c->width, v);
    printf("[consumer] %s\n", c->what);
  }
  return 1;
}


#if !TARGET_EVENT
static int consumer_main(void) {
  role = "consumer";
  static struct producer_report own;
  static CUdeviceptr ptrs[MAX_ALLOCS];
  memset(&own, 0, sizeof own);
  if (!init_cuda() || !build_setup(worker_allocs, N_WORKER_ALLOCS, 1, ptrs, table + N_PRODUCER_ALLOCS, &own)) {
    snprintf(page->detail, sizeof page->detail, "%s", error_text);
    page->verdict = V_SETUP_ERROR;
    return 2;
  }
  /* What the producer's allocations hold and which are exported (the consumer knows the
     set-up, as the campaign's workers do). */
  for (int i = 0; i < N_PRODUCER_ALLOCS; ++i) {
    table[i].name = producer_allocs[i].name;
    table[i].salt = salt_of(0, i);
    table[i].size = producer_allocs[i].bytes;
    table[i].decoy = producer_allocs[i].decoy || !from_producer.exported[i];
    table[i].n_live = 0;
  }
  for (int k = 0; k < from_producer.n_exports; ++k) {
    struct alloc_state *a = &table[from_producer.export_alloc[k]];
    a->live[a->n_live].offset = from_producer.export_offset[k];
    a->live[a->n_live++].size = SIZE_FIELD_OFFSET >= 0 ? load64(from_producer.handles[k] + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH)
                                                      : table[from_producer.export_alloc[k]].size - from_producer.export_offset[k];
  }
  table_size = N_PRODUCER_ALLOCS + N_WORKER_ALLOCS;
  /* Calibration, as the campaign's workers do: each unchanged producer handle opened once;
     where CUDA maps it (an interior export maps its allocation's base) counts as the export. */
  for (int k = 0; k < from_producer.n_exports; ++k) {
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    memcpy(h.reserved, from_producer.handles[k], 64);
    CUresult r = cu.cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != 0) {
      printf("[consumer] unchanged producer.export[%d] does not open: %s\n", k, err_name(r));
      continue;
    }
    unsigned char head[32];
    uint64_t offset = 0;
    int a = cu.cuMemcpyDtoH_v2(head, p, sizeof head) == 0 ? identify(p, head, &offset) : -1;
    if (a >= 0 && !table[a].decoy) {
      int known = 0;
      for (int i = 0; i < table[a].n_live; ++i) known |= table[a].live[i].offset == offset;
      if (!known && table[a].n_live < 8) {
        table[a].live[table[a].n_live].offset = offset;
        table[a].live[table[a].n_live++].size = table[a].size - offset;
        printf("[consumer] calibration: unchanged producer.export[%d] maps %s from offset %llu\n", k, table[a].name,
               (unsigned long long)offset);
      }
    }
    cu.cuIpcCloseMemHandle(p);
  }
  for (int k = 0; k < own.n_exports; ++k) {  /* the campaign's workers try their own too */
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    memcpy(h.reserved, own.handles[k], 64);
    if (cu.cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == 0) cu.cuIpcCloseMemHandle(p);
  }
  /* The input: a fresh handle with the finding's bytes applied. */
  const unsigned char *base = BASE_SIDE == 0 ? from_producer.handles[BASE_INDEX] : own.handles[BASE_INDEX];
  if ((BASE_SIDE == 0 ? from_producer.n_exports : own.n_exports) <= BASE_INDEX) {
    snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no %s", BASE_NAME);
    page->verdict = V_SETUP_ERROR;
    return 2;
  }
  unsigned char input[64];
  if (!apply_patches(&own, base, input)) return 2;
  print_handle(BASE_NAME, base);
  print_handle("input", input);
  printf("[consumer] bytes changed:");
  for (int i = 0; i < 64; ++i)
    if (input[i] != base[i]) printf(" %d:%02x->%02x", i, base[i], input[i]);
  printf("\n");
  fflush(stdout);
  int fd_floor = lowest_free_fd();
  CUipcMemHandle h;
  CUdeviceptr p = 0;
  memcpy(h.reserved, input, 64);
  page->stage = 1;
  CUresult r = cu.cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  page->stage = 2;
  int v;
  char detail[1024];
  if (r != 0) {
    v = V_REJECTED;
    snprintf(detail, sizeof detail, "cuIpcOpenMemHandle answered %s", err_name(r));
  } else {
    v = judge(p, input, detail, sizeof detail);
    CUresult closed = cu.cuIpcCloseMemHandle(p);
    unsigned char probe;
    if (v == V_MAPPED && closed != 0) {
      v = V_CLOSE_FAILED;
      snprintf(detail, sizeof detail, "cuIpcCloseMemHandle(%#llx) answered %s", (unsigned long long)p, err_name(closed));
    } else if (v == V_MAPPED && cu.cuMemcpyDtoH_v2(&probe, p, 1) == 0) {
      v = V_MAPPING_LEAK;
      snprintf(detail, sizeof detail, "cuMemcpyDtoH still reads %#llx after cuIpcCloseMemHandle", (unsigned long long)p);
    }
  }
  /* Is the consumer's context still usable? A read of its own allocation answers. */
  unsigned char word[8];
  CUresult health = cu.cuMemcpyDtoH_v2(word, ptrs[0], sizeof word);
  if (health != 0) {
    char before[1024];
    snprintf(before, sizeof before, "%s", detail);
    snprintf(detail, sizeof detail, "after this open (%s: %.512s), a read of the consumer's own allocation answered %s: its context is lost",
             verdict_names[v], before, err_name(health));
    v = V_CONTEXT_LOST;
  }
  if (v == V_REJECTED || v == V_MAPPED) {
    int floor = lowest_free_fd();
    if (floor > fd_floor) {
      snprintf(detail, sizeof detail, "descriptor %d was left open by the open%s", fd_floor, r == 0 ? " and close" : "");
      v = V_FD_LEAK;
    }
  }
  snprintf(page->detail, sizeof page->detail, "%s", detail);
  page->verdict = v;
  page->stage = 3;
  return 0;
}
#else
static int consumer_main(void) {
  role = "consumer";
  static struct producer_report own;
  static CUevent events[MAX_ALLOCS];
  memset(&own, 0, sizeof own);
  if (!init_cuda() || !make_gates() || !build_events(worker_events, N_WORKER_EVENTS, 0, events, &own)) {
    snprintf(page->detail, sizeof page->detail, "%s", error_text);
    page->verdict = V_SETUP_ERROR;
    return 2;
  }
  if ((BASE_SIDE == 0 ? from_producer.n_exports : own.n_exports) <= BASE_INDEX) {
    snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no %s", BASE_NAME);
    page->verdict = V_SETUP_ERROR;
    return 2;
  }
  const unsigned char *base = BASE_SIDE == 0 ? from_producer.handles[BASE_INDEX] : own.handles[BASE_INDEX];
  unsigned char input[64];
  if (!apply_patches(&own, base, input)) return 2;
  print_handle(BASE_NAME, base);
  print_handle("input", input);
  printf("[consumer] bytes changed:");
  for (int i = 0; i < 64; ++i)
    if (input[i] != base[i]) printf(" %d:%02x->%02x", i, base[i], input[i]);
  printf("\n");
  fflush(stdout);
  int fd_floor = lowest_free_fd();
  CUipcEventHandle h;
  CUevent ev = NULL;
  memcpy(h.reserved, input, 64);
  page->stage = 1;
  CUresult r = cu.cuIpcOpenEventHandle(&ev, h);
  page->stage = 2;
  int v;
  char detail[1024];
  if (r != 0) {
    v = V_REJECTED;
    snprintf(detail, sizeof detail, "cuIpcOpenEventHandle answered %s", err_name(r));
  } else {
    /* Every live export of the producer is complete; every other event of both processes
       (the producer's decoys, all of the consumer's own) is pending. */
    CUresult q = cu.cuEventQuery(ev);
    if (q == 0) {
      v = V_MAPPED;
      snprintf(detail, sizeof detail, "the opened event is complete, as every live export of the producer is");
    } else if (q == CUDA_ERROR_NOT_READY) {
      v = V_CONFUSED_DEPUTY;
      snprintf(detail, sizeof detail, "the opened event is pending (cuEventQuery answered CUDA_ERROR_NOT_READY): every live "
               "export of the producer is complete, so it is an event this consumer was never given");
    } else {
      v = V_UNREADABLE_MAPPING;
      snprintf(detail, sizeof detail, "cuIpcOpenEventHandle succeeded, but cuEventQuery of the opened event answered %s",
               err_name(q));
    }
    CUresult closed = cu.cuEventDestroy_v2(ev);
    if (v == V_MAPPED && closed != 0) {
      v = V_CLOSE_FAILED;
      snprintf(detail, sizeof detail, "cuEventDestroy of the opened event answered %s", err_name(closed));
    }
  }
  /* Is the consumer's context still usable? Its own first event must still read pending. */
  CUresult health = cu.cuEventQuery(events[0]);
  if (health != CUDA_ERROR_NOT_READY && health != 0) {
    char before[1024];
    snprintf(before, sizeof before, "%s", detail);
    snprintf(detail, sizeof detail, "after this open (%s: %.512s), cuEventQuery of the consumer's own event answered %s: its context is lost",
             verdict_names[v], before, err_name(health));
    v = V_CONTEXT_LOST;
  }
  if (v == V_REJECTED || v == V_MAPPED) {
    int floor = lowest_free_fd();
    if (floor > fd_floor) {
      snprintf(detail, sizeof detail, "descriptor %d was left open by the open%s", fd_floor, r == 0 ? " and release" : "");
      v = V_FD_LEAK;
    }
  }
  snprintf(page->detail, sizeof page->detail, "%s", detail);
  page->verdict = v;
  page->stage = 3;
  return 0;
}
#endif

/* ---- the parent: never loads CUDA; forks the producer and the consumer -------------- */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int finish(int v, const char *detail) {
  printf("finding  %s (expected %s)\n", FINDING_ID, verdict_names[EXPECTED_VERDICT]);
  printf("verdict  %s: %s\n", verdict_names[v], detail);
  if (v == V_SETUP_ERROR) {
    printf("result   set-up error: nothing was judged\n");
    return 2;
  }
  if (v == EXPECTED_VERDICT) {
    printf("result   REPRODUCED\n");
    return 1;
  }
  if (v == V_REJECTED || v == V_MAPPED) {
    printf("result   not reproduced: the driver handled this input cleanly\n");
    return 0;
  }
  printf("result   a different finding (%s), not the one recorded\n", verdict_names[v]);
  return 3;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  printf("%s\n", DESCRIPTION);
  if (NEEDS_DEAD_PID) {  /* a pid that named a process which has exited */
    dead_pid = fork();
    if (dead_pid == 0) _exit(0);
    if (dead_pid > 0) waitpid(dead_pid, NULL, 0);
  }
  int report[2], stop[2];
  if (pipe(report) != 0 || pipe(stop) != 0) return finish(V_SETUP_ERROR, strerror(errno));
  fflush(stdout);
  pid_t producer = fork();
  if (producer < 0) return finish(V_SETUP_ERROR, strerror(errno));
  if (producer == 0) {
    close(report[0]);
    close(stop[1]);
    _exit(producer_main(report[1], stop[0]));
  }
  close(report[1]);
  close(stop[0]);
  size_t got = 0;
  while (got < sizeof from_producer) {
    ssize_t n = read(report[0], (char *)&from_producer + got, sizeof from_producer - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  int rc;
  if (got != sizeof from_producer) {
    close(stop[1]);
    waitpid(producer, &rc, 0);
    return finish(V_SETUP_ERROR, "the producer died before it reported its exports");
  }
  if (!from_producer.ok) {
    close(stop[1]);
    waitpid(producer, &rc, 0);
    return finish(V_SETUP_ERROR, from_producer.error);
  }
  page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return finish(V_SETUP_ERROR, strerror(errno));
  memset(page, 0, sizeof *page);
  page->verdict = V_SETUP_ERROR;
  snprintf(page->detail, sizeof page->detail, "the consumer ended before it judged the open");
  pid_t consumer = fork();
  if (consumer < 0) return finish(V_SETUP_ERROR, strerror(errno));
  if (consumer == 0) {
    close(stop[1]);
    int code = consumer_main();
    fflush(stdout);
    _exit(code);  /* no CUDA teardown: after a lost context NVIDIA says to terminate the process */
  }
  int status = 0, hung = 0;
  double open_since = 0;
  for (;;) {
    pid_t w = waitpid(consumer, &status, WNOHANG);
    if (w == consumer) break;
    if (page->stage == 1) {
      if (open_since == 0) open_since = now();
      if (now() - open_since > HANG_SECONDS) {
        kill(consumer, SIGKILL);
        waitpid(consumer, &status, 0);
        hung = 1;
        break;
      }
    }
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    nanosleep(&ten_ms, NULL);
  }
  close(stop[1]);
  waitpid(producer, &rc, 0);
  char detail[1200];
  if (hung) {
    snprintf(detail, sizeof detail, "%s did not return within %d s; the consumer was killed", OPEN_CALL, HANG_SECONDS);
    return finish(V_HANG, detail);
  }
  if (WIFSIGNALED(status)) {
    const int stage = page->stage;
    snprintf(detail, sizeof detail, "the consumer died of signal %d (%s) %s%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
             stage == 1 ? "inside " : "", stage == 1 ? OPEN_CALL : stage == 2 ? "while judging what the open gave" : "outside the open");
    return finish(V_CRASH, detail);
  }
  return finish(page->verdict, page->detail);
}
)c_body"
;

}  // namespace

std::string export_c(const ExportCOptions& o) {
  Finding f;
  if (fs::is_regular_file(o.finding)) {
    f = from_file(o.finding);
  } else if (!o.results.empty()) {
    f = from_results(o.finding, o.results);
  } else {
    const fs::path repro = fs::path(o.campaign_dir) / "findings" / (o.finding + ".repro");
    if (!fs::exists(repro))
      throw std::invalid_argument("'" + o.finding + "' is no file, and " + repro.string() +
                                  " is not there; give a reproducer (findings/<id>.repro), or the finding's id with "
                                  "--results RESULTS.json (the campaign's results) or --out DIR (the campaign's folder)");
    f = from_file(repro.string());
  }
  if (f.adapter != "cuda")
    throw std::invalid_argument("finding '" + f.id + "' is from adapter '" + f.adapter +
                                "': --export-c supports cuda findings (CUDA memory handles, cuIpcOpenMemHandle; event "
                                "handles, cuIpcOpenEventHandle); rerun a finding of another adapter with 'ipcheck fuzz --replay'");
  if (f.target != "memory" && f.target != "event")
    throw std::invalid_argument("finding '" + f.id + "' is from a --target " + f.target +
                                " campaign: --export-c writes programs for memory- and event-handle findings; rerun it "
                                "with 'ipcheck fuzz --replay'");
  const bool events = f.target == "event";
  if (!f.has_input)
    throw std::invalid_argument("finding '" + f.id + "' has no input (" +
                                (f.detail.empty() ? std::string("seen at the end of a worker, not in an open") : f.detail) +
                                "): there is no open to write a program for");
  const auto expected = parse_verdict(f.outcome);
  if (!expected || !is_finding(*expected))
    throw std::invalid_argument("finding '" + f.id + "' records outcome '" + f.outcome + "', not a finding kind");
  const HandleLayout& layout = layout_for(f.layout, 64);
  const Symbolic& s = f.input;
  if (layout.size != 64 || s.length != 64 || !s.tail.empty())
    throw std::invalid_argument("finding '" + f.id + "' opens " + std::to_string(s.length) +
                                " bytes; a " + (events ? "CUipcEventHandle" : "CUipcMemHandle") +
                                " is 64 (the cuda adapter refuses other lengths itself)");
  if (s.resealed && layout.has_checksum())
    throw std::invalid_argument("finding '" + f.id + "' uses layout " + f.layout + ", which has a checksum; no CUDA handle has one");
  const auto [base_side, base_index] = export_name(s.base);
  if (base_side < 0)
    throw std::invalid_argument("finding '" + f.id + "' derives from '" + s.base +
                                "'; a CUDA program can rebuild producer.export[N] and worker.export[N]");
  bool needs_dead_pid = false;
  std::string patches;
  for (const auto& c : s.changes) {
    const int fi = layout.find(c.field);
    if (fi < 0)
      throw std::invalid_argument("finding '" + f.id + "' changes field '" + c.field + "', which layout " + layout.name + " lacks");
    const LayoutField& field = layout.fields[static_cast<std::size_t>(fi)];
    std::string source = "SRC_LITERAL", what;
    int src_index = 0;
    std::size_t src_offset = 0, src_width = 0;
    const auto dot = c.source.rfind('.');
    const auto [side, index] = dot == std::string::npos ? std::pair<int, int>{-1, -1} : export_name(c.source.substr(0, dot));
    const int sf = side >= 0 ? layout.find(c.source.substr(dot + 1)) : -1;
    if (side >= 0 && sf >= 0) {
      source = side == 0 ? "SRC_PRODUCER_EXPORT" : "SRC_WORKER_EXPORT";
      src_index = index;
      src_offset = layout.fields[static_cast<std::size_t>(sf)].offset;
      src_width = layout.fields[static_cast<std::size_t>(sf)].width;
      what = "bytes " + std::to_string(field.offset) + ".." + std::to_string(field.offset + field.width - 1) + " := bytes " +
             std::to_string(src_offset) + ".." + std::to_string(src_offset + src_width - 1) + " of " + c.source.substr(0, dot) +
             " in this run (" + hexnum(c.value) + " in the campaign)";
    } else if (c.source == "producer.pid" || c.source == "worker.pid" || c.source == "dead.pid") {
      source = c.source == "producer.pid" ? "SRC_PRODUCER_PID" : c.source == "worker.pid" ? "SRC_WORKER_PID" : "SRC_DEAD_PID";
      needs_dead_pid = needs_dead_pid || c.source == "dead.pid";
      what = "bytes " + std::to_string(field.offset) + ".." + std::to_string(field.offset + field.width - 1) + " := " +
             (c.source == "producer.pid" ? "the producer's pid"
              : c.source == "worker.pid" ? "the consumer's own pid"
                                         : "the pid of a process that has exited") +
             " (" + hexnum(c.value) + " in the campaign)";
    } else {
      what = "bytes " + std::to_string(field.offset) + ".." + std::to_string(field.offset + field.width - 1) + " := " +
             hexnum(c.value) + (c.source.empty() ? "" : " (the campaign's " + c.source + ", written as found)");
    }
    patches += "    {" + std::to_string(field.offset) + ", " + std::to_string(field.width) + ", " + source + ", " +
               std::to_string(src_index) + ", " + std::to_string(src_offset) + ", " + std::to_string(src_width) + ", " +
               hexnum(c.value & width_mask(field.width)) + "ull, " + c_string(what) + "},\n";
  }
  const int size_field = layout.find(FieldRole::size);
  const std::string mutation = describe(s, layout);

  std::ostringstream c;
  c << "/* Standalone reproducer of ipcheck fuzz finding " << comment_text(f.id) << " (CUDA IPC "
    << (events ? "event" : "memory") << " handle).\n"
    << " *\n"
    << wrap("Found on: NVIDIA driver " + comment_text(f.driver.empty() ? std::string("(not recorded)") : f.driver) +
                ", adapter cuda, handle layout " + comment_text(f.layout) + ".", " * ")
    << wrap("Written by: ipcheck " + comment_text(IPCHECK_VERSION) + " (ipcheck fuzz --export-c), from " +
                comment_text(f.from) + ".", " * ")
    << wrap("Finding: " + comment_text(f.outcome) + (f.detail.empty() ? "" : ": " + comment_text(f.detail)), " * ")
    << wrap("Input: " + comment_text(mutation) + ".", " * ")
    << " *\n"
    << wrap(events ? event_program_text(s.base) : memory_program_text(s.base), " * ")
    << " *\n"
    << " * Build: cc -std=c11 -Wall -Wextra -Werror -o repro repro.c -ldl\n"
    << " * Run:   ./repro        (REPRO_LIBCUDA=/path/to/libcuda.so.1 names another driver library)\n"
    << " * Exit:  1 the finding reproduced; 0 the open was handled cleanly (refused, or a correct mapping);\n"
    << " *        3 a different finding; 2 set-up error (no driver, no device, a set-up call failed).\n"
    << " */\n"
    << "#define _GNU_SOURCE\n"
    << "#include <dlfcn.h>\n#include <errno.h>\n#include <fcntl.h>\n#include <signal.h>\n#include <stdint.h>\n"
    << "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/mman.h>\n#include <sys/types.h>\n"
    << "#include <sys/wait.h>\n#include <time.h>\n#include <unistd.h>\n\n"
    << "/* ---- the finding, as data ---------------------------------------------------------- */\n"
    << "#define FINDING_ID " << c_string(f.id) << "\n"
    << "#define DESCRIPTION " << c_string("reproducer of ipcheck fuzz finding " + f.id + " (found on NVIDIA driver " +
                                           (f.driver.empty() ? std::string("?") : f.driver) + ", written by ipcheck " +
                                           IPCHECK_VERSION + ")") << "\n"
    << "#define EXPECTED_VERDICT V_" << [&] {
         std::string u = f.outcome;
         for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
         return u;
       }() << "\n"
    << "#define BASE_SIDE " << base_side << "  /* 0: a producer export, 1: the consumer's own */\n"
    << "#define BASE_INDEX " << base_index << "\n"
    << "#define BASE_NAME " << c_string(s.base) << "\n"
    << "#define SIZE_FIELD_OFFSET " << (size_field >= 0 ? std::to_string(layout.fields[static_cast<std::size_t>(size_field)].offset) : "-1")
    << "  /* where the handle's size is, in layout " << comment_text(layout.name) << " (-1: not used) */\n"
    << "#define SIZE_FIELD_WIDTH " << (size_field >= 0 ? layout.fields[static_cast<std::size_t>(size_field)].width : 8) << "\n"
    << "#define NEEDS_DEAD_PID " << (needs_dead_pid ? 1 : 0) << "\n"
    << "#define TARGET_EVENT " << (events ? 1 : 0) << "  /* 1: an event handle (cuIpcOpenEventHandle) */\n"
    << "#define OPEN_CALL " << (events ? "\"cuIpcOpenEventHandle\"" : "\"cuIpcOpenMemHandle\"") << "\n"
    << "#define HANG_SECONDS 10\n"
    << "enum { KIND_DEVICE, KIND_HOST, KIND_SHARED };\n"
    << "enum { SRC_LITERAL, SRC_PRODUCER_EXPORT, SRC_WORKER_EXPORT, SRC_PRODUCER_PID, SRC_WORKER_PID, SRC_DEAD_PID };\n"
    << (events ? event_tables() : alloc_tables())
    << "/* The finding's changes to the fresh handle of BASE_NAME: bytes [offset, offset + width)\n"
    << "   (little-endian) take the literal, or a value of this run (another export's bytes, a pid). */\n"
    << "struct patch {\n  int offset, width;\n  int source, source_index, source_offset, source_width;\n"
    << "  uint64_t literal;  /* the value tried in the campaign */\n  const char *what;\n};\n"
    << "static const struct patch patches[] = {\n" << patches << "    {-1, 0, SRC_LITERAL, 0, 0, 0, 0, \"\"},\n};\n\n"
    << kBody;
  const std::string text = c.str();
  {
    std::ofstream out(o.output, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + o.output);
  }
  return "wrote " + o.output + ": finding " + f.id + " (" + f.outcome + ", " + mutation + ")";
}

}  // namespace ipcheck::fuzz
