// The reader of reproducer files (findings/<id>.repro, schema ipcheck.fuzz-repro/1) and of
// corpus entries (the same schema, in a --corpus folder). A reproducer is input from anyone
// (findings are passed around), so every field is checked here, before anything acts on it,
// and a wrong one is named. Nothing here starts a process or loads a library: that is the
// replay's business (campaign_results.cpp), which decides which fields it trusts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/fuzz/symbolic.hpp"

namespace ipcheck::fuzz {

inline constexpr const char* kReproSchema = "ipcheck.fuzz-repro/1";

struct ReproFile {
  std::string setup;      // the campaign set-up it was made with
  std::string adapter;    // "" when the file names none
  std::string target;     // memory | physical | event ("memory" when the file names none)
  std::string transport;  // pidfd | scm | auto, "" when the file names none
  std::string expect;     // the finding it reproduced ("" for a corpus entry)
  // As the file gives them; the replay takes only those it trusts (never one naming a file).
  std::map<std::string, std::string> adapter_options;
  Symbolic input;
};

// Reads a reproducer document. Throws std::invalid_argument naming the field and what is
// wrong ("field \"setup\" is number, not text"); a document of another schema says so.
ReproFile reproducer_from_json(const nlohmann::json& doc);

// The adapter options of a reproducer that a replay may use: those the adapter takes
// (`accepted`) that name no library, loader or file (`path_options`). Every other one is
// appended to `ignored` as "key=value (why)". A file never chooses code or a path.
std::map<std::string, std::string> trusted_adapter_options(const ReproFile& f, const std::string& adapter,
                                                           const std::vector<std::string>& accepted,
                                                           const std::vector<std::string>& path_options,
                                                           std::vector<std::string>& ignored);

// A corpus entry: its input when it is a reproducer for `adapter` and `target`, nullopt when
// it belongs to another adapter or target (skipped silently); throws std::invalid_argument
// when it is malformed (the campaign skips it, saying why).
std::optional<nlohmann::json> corpus_entry_input(const nlohmann::json& doc, const std::string& adapter,
                                                 const std::string& target);

}  // namespace ipcheck::fuzz
