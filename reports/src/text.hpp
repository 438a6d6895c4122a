// Small text helpers shared by the renderers: escaping for each output language and
// number formatting (g++ 12 has no <format>).
#pragma once

#include <string>
#include <string_view>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports::text {

// printf-style formatting into a std::string.
std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

// "35 ms", "2.1 s", "4 min 5 s".
std::string duration(double seconds);
// A number without trailing zeros: 1234.5, 0.25, 12.
std::string number(double v);

// The first line of a text, trimmed ("" when there is none).
std::string first_line(std::string_view s);
// Trailing newlines and spaces removed.
std::string trim_end(std::string_view s);

// Role output made safe to show: terminal escape sequences (colours) removed, any other
// control character except newline and tab written as \xNN.
std::string plain(std::string_view s);
// "1 case", "2 cases".
std::string plural(long long n, std::string_view one, std::string_view many);

// &, <, >, " and ' as entities.
std::string html(std::string_view s);
// XML 1.0 text or attribute value: entities, and the control characters XML cannot hold
// at all (escape sequences in role output) written as \xNN. Element text keeps its line
// breaks; attribute values hold them as character references.
std::string xml(std::string_view s);
std::string xml_text(std::string_view s);
// Markdown inline text: punctuation Markdown would act on is backslash-escaped; newlines become spaces.
std::string md(std::string_view s);
// An inline code span that holds any text (backticks included); `|` escaped for tables.
std::string md_code(std::string_view s);
// A fenced block for multi-line text (the fence outgrows any backtick run inside).
std::string md_fence(std::string_view s, std::string_view info = "text");
// Pads or cuts to a display width counted in code points.
std::string pad(std::string_view s, std::size_t width);
std::size_t width(std::string_view s);

// Statuses in the order a person reads them: problems first, the worst first.
inline constexpr Status kProblemsFirst[] = {Status::crash, Status::timeout, Status::leak,  Status::fail,
                                            Status::error, Status::incomplete, Status::flaky, Status::xfail,
                                            Status::skip,  Status::pass};
// Clause verdicts in the order a person reads them: problems first.
inline constexpr ClauseVerdict kVerdictsFirst[] = {ClauseVerdict::fail,     ClauseVerdict::xfail,
                                                   ClauseVerdict::warn,     ClauseVerdict::emulated,
                                                   ClauseVerdict::pass,     ClauseVerdict::observed,
                                                   ClauseVerdict::not_run};
// "12 pass, 3 emulated, 2 not_run" over the clauses (verdicts with none left out); failed
// clauses of ipcheck's robustness profile count apart, as "hardening".
std::string verdicts_line(const std::vector<ClauseInfo>& clauses);
// A clause's verdict as a person reads it: a failure of a profile-only clause is a hardening
// request ("hardening"; "xfail (hardening)" when expected), never a violation ("fail").
std::string verdict_word(const ClauseInfo& k);
// True for a check of a clause whose only basis is ipcheck's robustness profile (rb.*).
bool hardening_clause(std::string_view clause_id) noexcept;
// How a failed check is introduced: "hardening request" for a profile clause, else "failed".
const char* failed_word(const Check& k) noexcept;
// Who decided a clause's passing checks: "runtime 5, adapter 2" (empty when none).
std::string decided_line(const ClauseInfo& k);
// A check's attribution for a person: "CUDA's cuIpcOpenMemHandle", "the adapter", "ipcheck".
std::string decided_by(const Check& k);
// "15 cases: 2 crash, 1 fail, 12 pass" (statuses with no case left out).
std::string counts_line(const Summary& s);
// The driver as people name it: "ipcref 0.1.0"; "(driver unknown)" when both are empty.
std::string driver_of(std::string_view name, std::string_view version);
std::string driver_of(const RunInfo& r);
// Device names, comma separated.
std::string devices_of(const RunInfo& r);

// Status colours, one per status, used by the HTML page and its pictures.
const char* status_color(Status s) noexcept;

}  // namespace ipcheck::reports::text
