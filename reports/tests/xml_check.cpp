#include "xml_check.hpp"

#include <cctype>
#include <regex>
#include <vector>

namespace ipcheck::reports::testing {

namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':'; }

// Checks the text between markup: entities and forbidden characters.
std::string check_text(const std::string& doc, std::size_t from, std::size_t to) {
  static const std::regex entity("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
  for (std::size_t i = from; i < to; ++i) {
    const auto u = static_cast<unsigned char>(doc[i]);
    if (u < 0x20 && doc[i] != '\n' && doc[i] != '\t' && doc[i] != '\r')
      return "control character " + std::to_string(u) + " at byte " + std::to_string(i);
    if (doc[i] == '<') return "raw < in text at byte " + std::to_string(i);
    if (doc[i] == '&' && !std::regex_search(doc.begin() + static_cast<long>(i), doc.begin() + static_cast<long>(to), entity))
      return "& that starts no entity at byte " + std::to_string(i);
  }
  return "";
}

}  // namespace

std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  int roots = 0;
  std::size_t i = 0;
  if (doc.rfind("<?xml", 0) == 0) i = doc.find("?>") + 2;
  while (i < doc.size()) {
    const std::size_t lt = doc.find('<', i);
    const std::size_t text_end = lt == std::string::npos ? doc.size() : lt;
    if (std::string p = check_text(doc, i, text_end); !p.empty()) return p;
    if (open.empty() && doc.find_first_not_of(" \n\t\r", i) < text_end) return "text outside the root element";
    if (lt == std::string::npos) break;
    if (doc.compare(lt, 4, "<!--") == 0) {
      const auto end = doc.find("-->", lt);
      if (end == std::string::npos) return "unclosed comment";
      i = end + 3;
      continue;
    }
    const bool closing = doc[lt + 1] == '/';
    std::size_t j = lt + (closing ? 2 : 1);
    const std::size_t name_start = j;
    while (j < doc.size() && name_char(doc[j])) ++j;
    const std::string name = doc.substr(name_start, j - name_start);
    if (name.empty()) return "element without a name at byte " + std::to_string(lt);
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open at byte " + std::to_string(lt);
      open.pop_back();
      if (doc[j] != '>') return "junk in </" + name + ">";
      i = j + 1;
      continue;
    }
    // Attributes: name="value" with an escaped value.
    for (;;) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size()) return "unterminated <" + name;
      if (doc[j] == '>' || doc.compare(j, 2, "/>") == 0) break;
      const std::size_t a = j;
      while (j < doc.size() && name_char(doc[j])) ++j;
      if (a == j || doc[j] != '=' || (doc[j + 1] != '"' && doc[j + 1] != '\''))
        return "malformed attribute in <" + name + "> at byte " + std::to_string(a);
      const char quote = doc[j + 1];
      const std::size_t end = doc.find(quote, j + 2);
      if (end == std::string::npos) return "unterminated attribute value in <" + name + ">";
      if (std::string p = check_text(doc, j + 2, end); !p.empty()) return p + " (attribute of <" + name + ">)";
      j = end + 1;
    }
    if (open.empty()) ++roots;
    if (roots > 1) return "more than one root element";
    if (doc[j] == '/') {
      i = j + 2;
    } else {
      open.push_back(name);
      i = j + 1;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots != 1) return "no root element";
  return "";
}

}  // namespace ipcheck::reports::testing
