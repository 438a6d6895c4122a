// `ipcheck fuzz --export-c`: a fuzz finding of the cuda adapter (CUDA's driver API) or of the
// ur adapter (Unified Runtime's memory IPC, on its Level Zero or CUDA backend) as a
// standalone C program. The program repeats the campaign's set-up (ipcheck.fuzz-setup/1: the
// same allocations in the same order, each filled with its own pattern, the same exports),
// takes a fresh handle of the export the finding derived from, applies the finding's
// changes (literals, or values of the new run: another export's bytes, a pid), opens it in
// a separate consumer process and judges the mapping as ipcheck's oracle does. This file
// writes the program's opening (the finding as data); the rest, the same for every finding,
// is plain C in fuzz/src/repro/ (one program per runtime). export_c_finding.cpp reads the
// finding and refuses one no program reproduces.
#include "export_c.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck_version.h"
#include "export_c_finding.hpp"
#include "protocol.hpp"

namespace ipcheck::fuzz::export_c_detail {
namespace {

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

// A finding's text as the program shows it when it runs, and as the "wrote" line shows it:
// through the one terminal escaper (reports::terminal_text: control characters, C1 and bytes
// that are not UTF-8 shown as \xNN or \uNNNN, never sent). Never code: in the program it is
// only ever passed to c_string.
std::string shown(const std::string& s) { return reports::terminal_text(s); }

// A finding's text in the program: a C string literal of its shown() form. The one encoder
// for text from the finding (ids, versions, paths, details, the input in words): no byte of it
// reaches a comment, a macro name or code (see opening_comment).
std::string c_text(const std::string& s) { return c_string(shown(s)); }

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

// The runtimes --export-c writes programs for.
enum class Runtime { cuda, ur };

std::string alloc_table(const std::vector<detail::AllocSpec>& specs, const std::string& who, Runtime rt) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    // CUDA has no put: the campaign's "revoked" export stays live, one more export. UR puts it.
    const bool put = s.revoked && rt == Runtime::ur;
    std::vector<std::uint64_t> offsets = s.revoked ? std::vector<std::uint64_t>{0} : s.exports;
    std::string offs;
    for (std::size_t e = 0; e < 4; ++e) offs += (e ? ", " : "") + std::to_string(e < offsets.size() ? offsets[e] : 0);
    out += "    {" + c_string(who + ".alloc[" + std::to_string(i) + "]") + ", " + std::to_string(s.bytes) + ", " +
           kind_code(s.kind) + ", " + std::to_string(s.device) + ", " + (s.decoy ? "1" : "0") + ", " +
           std::to_string(offsets.size()) + ", {" + offs + "}, " + (put ? "1" : "0") + "},\n";
  }
  return out;
}

// The export a program's input derives from, by side and index (export_name's inverse): the
// program's own words for it, never the finding's text.
std::string base_name(int side, int index) {
  static const char* const kSides[] = {"producer.export[", "worker.export[", "producer.revoked[", "worker.revoked["};
  return kSides[side] + std::to_string(index) + "]";
}

// "producer.export[3]" -> (0, 3); "worker.export[0]" -> (1, 0); "producer.revoked[0]" (an
// export put before the campaign) -> (2, 0); "worker.revoked[0]" -> (3, 0); anything else ->
// (-1, -1).
std::pair<int, int> export_name(const std::string& name) {
  for (const auto& [prefix, side] : {std::pair<std::string, int>{"producer.export[", 0}, {"worker.export[", 1},
                                     {"producer.revoked[", 2}, {"worker.revoked[", 3}})
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
std::string alloc_tables(Runtime rt) {
  std::ostringstream c;
  c << "struct alloc_spec {\n  const char *name;\n  size_t bytes;\n  int kind;\n  int device;  /* the last device when fewer exist */\n"
    << "  int decoy;   /* never exported */\n  int n_exports;\n  uint64_t offsets[4];  /* exported at these offsets */\n"
    << "  int revoked; /* its one export is put before the open */\n};\n"
    << (rt == Runtime::cuda ? "/* The campaign's set-up, in its order (CUDA has no put: every export stays live). */\n"
                            : "/* The campaign's set-up, in its order. */\n")
    << "static const struct alloc_spec producer_allocs[] = {\n" << alloc_table(detail::producer_setup(), "producer", rt) << "};\n"
    << "static const struct alloc_spec worker_allocs[] = {\n" << alloc_table(detail::consumer_setup(), "worker", rt) << "};\n"
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

// The rest of the program, the same for every finding of a runtime: fuzz/src/repro/*.c,
// embedded at build time (fuzz/CMakeLists.txt, embed.cmake).
const char* const kCudaBody =
#include "repro_cuda_program.inc"
    ;
const char* const kUrBody =
#include "repro_ur_program.inc"
    ;

// What a ur finding's handle layout says the run was on: UR's backend and Level Zero adapter.
struct UrTarget {
  std::string backend, l0;
};

UrTarget ur_target(const Finding& f) {
  if (f.layout == "ur-umf-l0-v1/1") return {"level_zero", "v1"};
  if (f.layout == "ur-umf-l0-v2/1") return {"level_zero", "v2"};
  if (f.layout == "ur-umf-cuda/1") return {"cuda", ""};
  throw std::invalid_argument("finding '" + f.id + "' uses handle layout '" + f.layout +
                              "'; a Unified Runtime program knows ur-umf-l0-v1/1, ur-umf-l0-v2/1 and ur-umf-cuda/1 "
                              "(UMF's header and a provider's bytes)");
}

// The program's table of the finding's changes, one row each.
struct PatchRows {
  std::string rows;
  bool needs_dead_pid = false;
};

std::string byte_range(const LayoutField& field) {
  return "bytes " + std::to_string(field.offset) + ".." + std::to_string(field.offset + field.width - 1);
}

// One change as a row of `patches[]`: where it goes, where its value comes from in the
// program's run (a literal, another export's bytes, a pid) and what it does, in words.
std::string patch_row(const Finding& f, const HandleLayout& layout, const FieldChange& c, bool& needs_dead_pid) {
  const int fi = layout.find(c.field);
  if (fi < 0)
    throw std::invalid_argument("finding '" + f.id + "' changes field '" + c.field + "', which layout " + layout.name + " lacks");
  const LayoutField& field = layout.fields[static_cast<std::size_t>(fi)];
  std::string source = "SRC_LITERAL", what;
  int src_index = 0;
  std::size_t src_offset = 0, src_width = 0;
  // "producer.export[2].offset", "producer.export[0].umf.offset": the export, then its field
  // (whose name may hold dots).
  const auto close = c.source.find("].");
  const auto dot = close == std::string::npos ? std::string::npos : close + 1;
  const auto [side, index] = dot == std::string::npos ? std::pair<int, int>{-1, -1} : export_name(c.source.substr(0, dot));
  const int sf = side >= 0 ? layout.find(c.source.substr(dot + 1)) : -1;
  if (side >= 0 && sf >= 0) {
    source = side == 0 ? "SRC_PRODUCER_EXPORT" : side == 1 ? "SRC_WORKER_EXPORT" : side == 2 ? "SRC_PRODUCER_REVOKED"
                                                                                            : "SRC_WORKER_REVOKED";
    src_index = index;
    src_offset = layout.fields[static_cast<std::size_t>(sf)].offset;
    src_width = layout.fields[static_cast<std::size_t>(sf)].width;
    what = byte_range(field) + " := bytes " + std::to_string(src_offset) + ".." +
           std::to_string(src_offset + src_width - 1) + " of " + c.source.substr(0, dot) + " in this run (" +
           hexnum(c.value) + " in the campaign)";
  } else if (c.source == "producer.pid" || c.source == "worker.pid" || c.source == "dead.pid") {
    source = c.source == "producer.pid" ? "SRC_PRODUCER_PID" : c.source == "worker.pid" ? "SRC_WORKER_PID" : "SRC_DEAD_PID";
    needs_dead_pid = needs_dead_pid || c.source == "dead.pid";
    what = byte_range(field) + " := " +
           (c.source == "producer.pid" ? "the producer's pid"
            : c.source == "worker.pid" ? "the consumer's own pid"
                                       : "the pid of a process that has exited") +
           " (" + hexnum(c.value) + " in the campaign)";
  } else {
    what = byte_range(field) + " := " + hexnum(c.value) +
           (c.source.empty() ? "" : " (the campaign's " + c.source + ", written as found)");
  }
  return "    {" + std::to_string(field.offset) + ", " + std::to_string(field.width) + ", " + source + ", " +
         std::to_string(src_index) + ", " + std::to_string(src_offset) + ", " + std::to_string(src_width) + ", " +
         hexnum(c.value & width_mask(field.width)) + "ull, " + c_text(what) + "},\n";
}

PatchRows patch_rows(const Finding& f, const HandleLayout& layout) {
  PatchRows p;
  for (const auto& c : f.input.changes) p.rows += patch_row(f, layout, c, p.needs_dead_pid);
  return p;
}

// Everything the program's text is made from.
struct ReproProgram {
  const Finding& f;
  const HandleLayout& layout;
  Runtime runtime;
  UrTarget ur;  // Runtime::ur: the backend and Level Zero adapter of the finding's run
  bool events;
  int base_side, base_index;
  PatchRows patches;
  std::string mutation;  // the input, in words
};

std::string ur_program_text(const ReproProgram& p, const std::string& base) {
  return "What it does: a producer process (fork, no exec) loads Unified Runtime (libur_loader.so.0, with dlopen), "
         "takes the first " + p.ur.backend + " platform with devices" +
         (p.ur.l0.empty() ? std::string() : " (UR's Level Zero " + p.ur.l0 + " adapter: UR_LOADER_USE_LEVEL_ZERO_V2=" +
                                                (p.ur.l0 == "v2" ? "1" : "0") + ")") +
         " and a context of all its devices, as ipcheck's ur adapter does, makes the allocations of the campaign's "
         "set-up (ipcheck.fuzz-setup/1) with urUSMDeviceAlloc (urUSMSharedAlloc, urUSMHostAlloc), in the same order, "
         "fills each with its own pattern (the 8-byte word at offset o is salt + o) and exports some with "
         "urIPCGetMemHandleExp; one export is put (urIPCPutMemHandleExp) at once, as the campaign's stale handle; the "
         "others are decoys that are never exported. It passes the handles' bytes to the parent through a pipe. A "
         "consumer process makes its own allocations and exports, opens each unchanged producer handle once (as the "
         "campaign's workers do), then takes the handle of " + base +
         ", applies the finding's changes (below, as data: the handle embeds pids, addresses and ids, so values taken "
         "from the campaign's live processes are taken from this run's), opens it on device 0 with "
         "urIPCOpenMemHandleExp and judges it: the open must fail, or map an export whose pattern reads back in full "
         "(urEnqueueUSMMemcpy) for the size the handle claims; then urIPCCloseMemHandleExp must unmap it, and a read "
         "of the consumer's own allocation must still work. A crash (inside the open, or while reading what it "
         "gave) and an open that does not return are findings too.";
}

// The opening comment: what the program does and how to build and run it, in the program's
// own words only. The finding's texts (its id, where it was found, what the campaign saw, the
// input) come from files anyone can write; they are data (FINDING_* below, c_text), never
// comment text: a comment ends at the first "*/", and a backslash-newline or a "??/" trigraph
// inside it splices lines before comments are removed, so no escaping of a comment is safe.
std::string opening_comment(const ReproProgram& p) {
  std::ostringstream c;
  const std::string base = base_name(p.base_side, p.base_index);
  const std::string finding =
      " * The finding (its id, where it was found, what the campaign saw, the input) is in the FINDING_*\n"
      " * strings below, which the program prints when it starts.\n";
  if (p.runtime == Runtime::ur) {
    c << "/* Standalone reproducer of an ipcheck fuzz finding (Unified Runtime IPC memory handle).\n"
      << finding << " *\n"
      << wrap(ur_program_text(p, base), " * ")
      << " *\n"
      << " * Build: cc -std=c11 -Wall -Wextra -Werror -o repro repro.c -ldl\n"
      << " * Run:   ./repro [--backend level_zero|cuda] [--l0 v1|v2] [path/to/libur_loader.so.0]\n"
      << wrap("The finding's backend is the default (--backend " + p.ur.backend +
                  (p.ur.l0.empty() ? std::string() : " --l0 " + p.ur.l0) +
                  "); another is allowed when the finding changes only UMF's 40-byte header, which every provider "
                  "shares. The loader: the argument, REPRO_UR_LOADER, or libur_loader.so.0 on the library path; "
                  "Level Zero drivers as the loader finds them (ZE_ENABLE_ALT_DRIVERS names one).",
              " *        ")
      << " * Exit:  1 the finding reproduced; 0 the open was handled cleanly (refused, or a correct mapping);\n"
      << " *        3 a different finding; 2 set-up error (no runtime, no device, a set-up call failed).\n"
      << " */\n";
    return c.str();
  }
  c << "/* Standalone reproducer of an ipcheck fuzz finding (CUDA IPC " << (p.events ? "event" : "memory") << " handle).\n"
    << finding << " *\n"
    << wrap(p.events ? event_program_text(base) : memory_program_text(base), " * ")
    << " *\n"
    << " * Build: cc -std=c11 -Wall -Wextra -Werror -o repro repro.c -ldl\n"
    << " * Run:   ./repro        (REPRO_LIBCUDA=/path/to/libcuda.so.1 names another driver library)\n"
    << " * Exit:  1 the finding reproduced; 0 the open was handled cleanly (refused, or a correct mapping);\n"
    << " *        3 a different finding; 2 set-up error (no driver, no device, a set-up call failed).\n"
    << " */\n";
  return c.str();
}

// The finding's texts, each a C string literal (c_text), printed by the program at its start.
std::string finding_texts(const ReproProgram& p) {
  const Finding& f = p.f;
  std::string options;
  for (const auto& [k, v] : f.adapter_options) options += (options.empty() ? "" : ", ") + k + "=" + v;
  const std::string driver = f.driver.empty() ? std::string("(not recorded)") : f.driver;
  const std::string found_on =
      p.runtime == Runtime::ur
          ? "Unified Runtime " + driver + ", adapter ur" + (options.empty() ? "" : " (" + options + ")") +
                ", handle layout " + f.layout
          : "NVIDIA driver " + driver + ", adapter cuda, handle layout " + f.layout;
  std::ostringstream c;
  c << "#define FINDING_ID " << c_text(f.id) << "\n"
    << "#define FINDING_FOUND_ON " << c_text(found_on) << "\n"
    << "#define FINDING_WRITTEN_BY " << c_text("ipcheck " + std::string(IPCHECK_VERSION) + " (ipcheck fuzz --export-c), from " + f.from) << "\n"
    << "#define FINDING_OUTCOME " << c_text(f.outcome + (f.detail.empty() ? "" : ": " + f.detail)) << "\n"
    << "#define FINDING_INPUT " << c_text(p.mutation) << "\n"
    << "#define DESCRIPTION "
    << c_text("reproducer of ipcheck fuzz finding " + f.id + " (found on " +
              (p.runtime == Runtime::ur ? "Unified Runtime " : "NVIDIA driver ") +
              (f.driver.empty() ? std::string("?") : f.driver) + ", written by ipcheck " + IPCHECK_VERSION + ")")
    << "\n";
  return c.str();
}

std::string upper_case(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// The finding as data: #defines the program's body reads, the set-up tables and the patches.
std::string finding_data(const ReproProgram& p) {
  const Finding& f = p.f;
  const HandleLayout& layout = p.layout;
  const int size_field = layout.find(FieldRole::size);
  std::ostringstream c;
  c << "/* ---- the finding, as data ---------------------------------------------------------- */\n"
    << finding_texts(p)
    << "#define EXPECTED_VERDICT V_" << upper_case(verdict_name(*parse_verdict(f.outcome))) << "\n"
    << "#define BASE_SIDE " << p.base_side
    << "  /* 0: a producer export, 1: the consumer's own; 2, 3: the same, put before the open */\n"
    << "#define BASE_INDEX " << p.base_index << "\n"
    << "#define BASE_NAME " << c_string(base_name(p.base_side, p.base_index)) << "\n"
    << "#define SIZE_FIELD_OFFSET " << (size_field >= 0 ? std::to_string(layout.fields[static_cast<std::size_t>(size_field)].offset) : "-1")
    << "  /* where the handle's size is, in layout HANDLE_LAYOUT (-1: not used) */\n"
    << "#define SIZE_FIELD_WIDTH " << (size_field >= 0 ? layout.fields[static_cast<std::size_t>(size_field)].width : 8) << "\n"
    << "#define NEEDS_DEAD_PID " << (p.patches.needs_dead_pid ? 1 : 0) << "\n"
    << "#define TARGET_EVENT " << (p.events ? 1 : 0) << "  /* 1: an event handle (cuIpcOpenEventHandle) */\n"
    << "#define OPEN_CALL "
    << (p.runtime == Runtime::ur ? "\"urIPCOpenMemHandleExp\""
        : p.events               ? "\"cuIpcOpenEventHandle\""
                                 : "\"cuIpcOpenMemHandle\"")
    << "\n"
    << "#define HANDLE_BYTES " << layout.size << "  /* the handle's length in layout HANDLE_LAYOUT */\n"
    << "#define HANDLE_LAYOUT " << c_text(layout.name) << "\n"
    << "#define MAX_HANDLE_BYTES " << (p.runtime == Runtime::ur ? 256 : 64) << "\n";
  if (p.runtime == Runtime::ur)
    c << "#define FINDING_BACKEND " << c_string(p.ur.backend) << "  /* UR's backend in the finding's run */\n"
      << "#define FINDING_L0 " << c_string(p.ur.l0) << "  /* UR's Level Zero adapter in it (\"\" on cuda) */\n";
  c << "#define HANG_SECONDS 10\n"
    << "enum { KIND_DEVICE, KIND_HOST, KIND_SHARED };\n"
    << "enum { SRC_LITERAL, SRC_PRODUCER_EXPORT, SRC_WORKER_EXPORT, SRC_PRODUCER_REVOKED, SRC_WORKER_REVOKED,\n"
    << "       SRC_PRODUCER_PID, SRC_WORKER_PID, SRC_DEAD_PID };\n"
    << (p.events ? event_tables() : alloc_tables(p.runtime))
    << "/* The finding's changes to the fresh handle of BASE_NAME: bytes [offset, offset + width)\n"
    << "   (little-endian) take the literal, or a value of this run (another export's bytes, a pid). */\n"
    << "struct patch {\n  int offset, width;\n  int source, source_index, source_offset, source_width;\n"
    << "  uint64_t literal;  /* the value tried in the campaign */\n  const char *what;\n};\n"
    << "static const struct patch patches[] = {\n" << p.patches.rows << "    {-1, 0, SRC_LITERAL, 0, 0, 0, 0, \"\"},\n};\n\n";
  return c.str();
}

// The whole program: the opening comment, the headers, the finding as data, then the body
// (fuzz/src/repro/*.c), which is the same for every finding.
std::string program_text(const ReproProgram& p) {
  return opening_comment(p) +
         "#define _GNU_SOURCE\n"
         "#include <dlfcn.h>\n#include <errno.h>\n#include <fcntl.h>\n#include <signal.h>\n#include <stdbool.h>\n"
         "#include <stdint.h>\n"
         "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/mman.h>\n#include <sys/types.h>\n"
         "#include <sys/wait.h>\n#include <time.h>\n#include <unistd.h>\n\n" +
         finding_data(p) + (p.runtime == Runtime::ur ? kUrBody : kCudaBody);
}

// Through the one atomic writer (reports/src/files.cpp): a planted link or FIFO at `path`
// is replaced, never followed or waited on, and a full disk leaves the old file whole.
void write_program(const std::string& path, const std::string& text) { reports::write_file_atomic(path, text); }

}  // namespace
}  // namespace ipcheck::fuzz::export_c_detail

namespace ipcheck::fuzz {

std::string export_c(const ExportCOptions& o) {
  using namespace export_c_detail;
  const Finding f = find_export_finding(o);
  check_exportable(f);
  const bool events = f.target == "event";
  const Runtime runtime = f.adapter == "ur" ? Runtime::ur : Runtime::cuda;
  UrTarget ur;
  if (runtime == Runtime::ur) ur = ur_target(f);
  const HandleLayout& layout = layout_for(f.layout, runtime == Runtime::ur ? f.input.length : 64);
  if (runtime == Runtime::ur)
    check_ur_input(f, layout);
  else
    check_cuda_input(f, layout, events);
  const auto [base_side, base_index] = export_name(f.input.base);
  if (base_side < 0 || (runtime == Runtime::cuda && base_side > 1))
    throw std::invalid_argument("finding '" + f.id + "' derives from '" + f.input.base + "'; " +
                                (runtime == Runtime::ur ? "a Unified Runtime program can rebuild producer.export[N], "
                                                          "worker.export[N] and producer.revoked[N]"
                                                        : "a CUDA program can rebuild producer.export[N] and worker.export[N]"));
  const ReproProgram p{f,         layout,     runtime, ur, events, base_side, base_index, patch_rows(f, layout),
                       describe(f.input, layout)};
  write_program(o.output, program_text(p));
  // A line for the terminal: the finding's texts and the path as shown() writes them.
  return "wrote " + shown(o.output) + ": finding " + shown(f.id) + " (" + f.outcome + ", " + shown(p.mutation) + ")";
}

}  // namespace ipcheck::fuzz
