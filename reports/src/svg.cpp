#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "text.hpp"

namespace ipcheck::reports::svg {

using text::fmt;
using text::html;

namespace {

constexpr const char* kFont = "font-family=\"system-ui, sans-serif\" font-size=\"12\"";

std::string open_svg(int w, int h, const std::string& label) {
  return fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
             "aria-label=\"%s\" %s>\n<title>%s</title>\n",
             w, h, w, h, html(label).c_str(), kFont, html(label).c_str());
}

std::string shorten(const std::string& s, std::size_t n) {
  if (text::width(s) <= n) return s;
  // Keep the end: versions differ in their last characters.
  std::string out;
  std::size_t skip = text::width(s) - (n - 1), seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++seen;
    if (seen > skip) out += s[i];
  }
  return "\xE2\x80\xA6" + out;
}

}  // namespace

std::string status_bars(const Summary& s) {
  std::vector<std::pair<Status, int>> rows;
  int max = 0;
  for (Status st : text::kProblemsFirst)
    if (int n = s.of(st); n > 0) {
      rows.emplace_back(st, n);
      max = std::max(max, n);
    }
  const int row = 24, label = 84, bar = 380, w = label + bar + 60;
  const int h = std::max<int>(1, static_cast<int>(rows.size())) * row + 8;
  std::string out = open_svg(w, h, "cases by status: " + text::counts_line(s));
  if (rows.empty()) out += fmt("<text x=\"0\" y=\"16\">no cases</text>\n");
  int y = 4;
  for (const auto& [st, n] : rows) {
    const int len = std::max(2, static_cast<int>(std::lround(static_cast<double>(bar) * n / max)));
    out += fmt("<g class=\"bar\" data-status=\"%s\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
               "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"2\" fill=\"%s\"/>"
               "<text x=\"%d\" y=\"%d\">%d</text></g>\n",
               to_string(st), label - 8, y + 15, to_string(st), label, y + 2, len, row - 6, text::status_color(st),
               label + len + 6, y + 15, n);
    y += row;
  }
  return out + "</svg>\n";
}

std::string fuzz_histogram(const FuzzSummary& f) {
  // The oracle's verdicts: a clean rejection or an exact mapping; every other kind is a finding.
  auto is_finding = [](const std::string& k) { return k != "rejected" && k != "mapped"; };
  long long max = 1;
  for (const auto& [k, v] : f.verdicts) max = std::max(max, v);
  const int row = 24, label = 130, bar = 340, w = label + bar + 90;
  const int h = std::max<int>(1, static_cast<int>(f.verdicts.size())) * row + 26;
  std::string out = open_svg(w, h, "fuzz verdicts, log scale");
  const double top = std::log10(static_cast<double>(max) + 1);
  int y = 4;
  for (const auto& [k, v] : f.verdicts) {
    const double frac = top > 0 ? std::log10(static_cast<double>(v) + 1) / top : 0;
    const int len = v > 0 ? std::max(2, static_cast<int>(std::lround(bar * frac))) : 0;
    const bool finding = is_finding(k) && v > 0;
    out += fmt("<g class=\"bar\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
               "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"2\" fill=\"%s\"/>"
               "<text x=\"%d\" y=\"%d\">%lld</text></g>\n",
               label - 8, y + 15, html(k).c_str(), label, y + 2, len, row - 6, finding ? "#b71c1c" : "#1565c0",
               label + len + 6, y + 15, v);
    y += row;
  }
  // Decades along the axis so that the log scale reads as one.
  for (long long d = 1; d <= max; d *= 10) {
    const int x = label + static_cast<int>(std::lround(bar * std::log10(static_cast<double>(d) + 1) / top));
    out += fmt("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbb\"/><text x=\"%d\" y=\"%d\" "
               "text-anchor=\"middle\" fill=\"#666\" font-size=\"10\">%lld</text>\n",
               x, y, x, y + 4, x, y + 16, d);
    if (d > max / 10) break;
  }
  return out + "</svg>\n";
}

std::string bench_floors(const std::vector<Benchmark>& list) {
  double max = 1.2;
  for (const auto& b : list)
    if (b.floor > 0) max = std::max(max, b.ratio + b.spread / b.floor);
  max *= 1.1;
  const int row = 26, label = 190, bar = 330, w = label + bar + 150;
  const int h = std::max<int>(1, static_cast<int>(list.size())) * row + 28;
  std::string out = open_svg(w, h, "benchmark medians against their floors");
  auto x_of = [&](double ratio) { return label + static_cast<int>(std::lround(bar * ratio / max)); };
  int y = 4;
  for (const auto& b : list) {
    const std::string value = text::number(b.median) + " " + b.unit;
    out += fmt("<g class=\"bench\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", label - 8, y + 16,
               html(shorten(b.name, 28)).c_str());
    if (b.floor > 0) {
      const double lo = std::max(0.0, b.ratio - b.spread / b.floor), hi = b.ratio + b.spread / b.floor;
      out += fmt("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"2\" fill=\"%s\"/>"
                 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#222\" stroke-width=\"1.5\"/>"
                 "<text x=\"%d\" y=\"%d\">%s (%.2fx)</text>",
                 label, y + 4, std::max(2, x_of(b.ratio) - label), row - 10, b.ratio > 2 ? "#ef6c00" : "#1565c0",
                 x_of(lo), y + row / 2 + 1, x_of(hi), y + row / 2 + 1, x_of(std::max(b.ratio, hi)) + 6, y + 16,
                 html(value).c_str(), b.ratio);
    } else {
      out += fmt("<text x=\"%d\" y=\"%d\" fill=\"#666\">%s (no floor)</text>", label, y + 16, html(value).c_str());
    }
    out += "</g>\n";
    y += row;
  }
  const int fx = x_of(1.0);
  out += fmt("<line x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\" stroke=\"#2e7d32\" stroke-dasharray=\"4 3\"/>"
             "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#2e7d32\">floor (1x)</text>\n",
             fx, fx, y, fx, y + 16);
  return out + "</svg>\n";
}

std::string status_trend(const std::vector<TrendColumn>& columns) {
  int max = 1;
  for (const auto& c : columns) max = std::max(max, c.summary.total);
  const int col = 76, left = 40, plot = 200, top = 10;
  const int w = left + col * std::max<int>(1, static_cast<int>(columns.size())) + 130;
  const int h = top + plot + 44;
  std::string out = open_svg(w, h, "status counts per run, oldest on the left as given");
  out += fmt("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", left - 4, top + plot,
             left + col * static_cast<int>(columns.size()), top + plot);
  out += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#666\">%d</text><text x=\"%d\" y=\"%d\" "
             "text-anchor=\"end\" fill=\"#666\">0</text>\n",
             left - 8, top + 10, max, left - 8, top + plot);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const int x = left + col * static_cast<int>(i) + 10;
    double y = top + plot;
    out += fmt("<g class=\"run\" data-run=\"%zu\">", i + 1);
    // Pass at the bottom, problems stacked on top where the eye lands.
    for (auto it = std::rbegin(text::kProblemsFirst); it != std::rend(text::kProblemsFirst); ++it) {
      const int n = columns[i].summary.of(*it);
      if (!n) continue;
      const double hgt = static_cast<double>(plot) * n / max;
      y -= hgt;
      out += fmt("<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"><title>%s: %d</title></rect>", x, y,
                 col - 20, hgt, text::status_color(*it), to_string(*it), n);
    }
    out += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>", x + (col - 20) / 2, top + plot + 16,
               html(shorten(columns[i].label, 11)).c_str());
    out += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\" font-size=\"10\">%d unexpected</text></g>\n",
               x + (col - 20) / 2, top + plot + 32, columns[i].summary.unexpected);
  }
  // Legend.
  int ly = top + 4;
  const int lx = left + col * static_cast<int>(columns.size()) + 16;
  for (Status st : text::kProblemsFirst) {
    out += fmt("<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n", lx,
               ly, text::status_color(st), lx + 16, ly + 10, to_string(st));
    ly += 18;
  }
  return out + "</svg>\n";
}

}  // namespace ipcheck::reports::svg
