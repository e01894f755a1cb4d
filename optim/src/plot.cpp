// history_svg and history_csv: hand-written SVG (no plotting library), laid out as one
// panel per metric family.
#include "glia/optim/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "glia/core/error.hpp"
#include "glia/datasets/atomic_file.hpp"

namespace glia {

namespace {

constexpr const char* kValidation = "validation_";
constexpr double kWidth = 640, kPanel = 220, kLeft = 70, kRight = 150, kTop = 40, kGap = 30;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v, int digits = 4) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string family(const std::string& name) {
  const std::string prefix = kValidation;
  return name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name;
}

}  // namespace

std::string history_svg(const History& history, const std::string& title) {
  // Metric families in order of first appearance of a name, sorted within.
  std::set<std::string> names;
  for (const auto& epoch : history)
    for (const auto& [name, v] : epoch)
      if (std::isfinite(v)) names.insert(name);
  std::vector<std::string> families;
  for (const std::string& n : names)
    if (std::find(families.begin(), families.end(), family(n)) == families.end())
      families.push_back(family(n));
  const double panels = std::max<double>(1, double(families.size()));
  const double height = kTop + panels * (kPanel + kGap);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPanel - 40;
  const auto epochs = static_cast<double>(history.size());
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) + "\" height=\"" +
         number(height) + "\" viewBox=\"0 0 " + number(kWidth) + " " + number(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + number(kWidth / 2) +
         "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + escape(title) + "</text>\n";
  if (families.empty()) {
    svg += "<text x=\"" + number(kWidth / 2) + "\" y=\"" + number(kTop + kPanel / 2) +
           "\" text-anchor=\"middle\">no metric values in the history</text>\n";
    return svg + "</svg>\n";
  }
  int color = 0;
  for (std::size_t p = 0; p < families.size(); ++p) {
    const std::string& fam = families[p];
    const double top = kTop + double(p) * (kPanel + kGap), bottom = top + plot_h;
    std::vector<std::string> members;
    for (const std::string& n : names)
      if (family(n) == fam) members.push_back(n);
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& epoch : history)
      for (const std::string& n : members)
        if (auto it = epoch.find(n); it != epoch.end() && std::isfinite(it->second))
          lo = std::min(lo, it->second), hi = std::max(hi, it->second);
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) lo -= 0.5, hi += 0.5;  // a flat curve
    auto x_at = [&](std::size_t e) {
      return kLeft + (epochs > 1 ? double(e) / (epochs - 1) : 0.5) * plot_w;
    };
    auto y_at = [&](double v) { return bottom - (v - lo) / (hi - lo) * plot_h; };
    svg += "<g>\n<text x=\"" + number(kLeft) + "\" y=\"" + number(top - 8) +
           "\" font-weight=\"bold\">" + escape(fam) + "</text>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" y1=\"" + number(bottom) + "\" x2=\"" +
           number(kLeft + plot_w) + "\" y2=\"" + number(bottom) + "\" stroke=\"black\"/>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" y1=\"" + number(top) + "\" x2=\"" + number(kLeft) +
           "\" y2=\"" + number(bottom) + "\" stroke=\"black\"/>\n";
    for (double v : {lo, hi})
      svg += "<text x=\"" + number(kLeft - 6) + "\" y=\"" + number(y_at(v) + 4) +
             "\" text-anchor=\"end\">" + number(v) + "</text>\n";
    svg += "<text x=\"" + number(kLeft) + "\" y=\"" + number(bottom + 16) +
           "\" text-anchor=\"middle\">1</text>\n";
    if (history.size() > 1)
      svg += "<text x=\"" + number(kLeft + plot_w) + "\" y=\"" + number(bottom + 16) +
             "\" text-anchor=\"middle\">" + number(epochs, 10) + "</text>\n";
    svg += "<text x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" + number(bottom + 30) +
           "\" text-anchor=\"middle\">epoch</text>\n";
    for (std::size_t m = 0; m < members.size(); ++m) {
      const char* c = kColors[color++ % (sizeof kColors / sizeof kColors[0])];
      std::string points, dots;
      for (std::size_t e = 0; e < history.size(); ++e)
        if (auto it = history[e].find(members[m]);
            it != history[e].end() && std::isfinite(it->second)) {
          const std::string xy = number(x_at(e), 7) + "," + number(y_at(it->second), 7);
          points += (points.empty() ? "" : " ") + xy;
          dots += "<circle cx=\"" + number(x_at(e), 7) + "\" cy=\"" + number(y_at(it->second), 7) +
                  "\" r=\"2.5\" fill=\"" + c + "\"/>\n";
        }
      svg += "<polyline class=\"curve\" data-metric=\"" + escape(members[m]) +
             "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"2\" points=\"" + points +
             "\"/>\n" + dots;
      const double ly = top + 14 + 18 * double(m);
      svg += "<line x1=\"" + number(kLeft + plot_w + 12) + "\" y1=\"" + number(ly - 4) +
             "\" x2=\"" + number(kLeft + plot_w + 32) + "\" y2=\"" + number(ly - 4) +
             "\" stroke=\"" + c + "\" stroke-width=\"2\"/>\n";
      svg += "<text x=\"" + number(kLeft + plot_w + 38) + "\" y=\"" + number(ly) + "\">" +
             escape(members[m]) + "</text>\n";
    }
    svg += "</g>\n";
  }
  return svg + "</svg>\n";
}

std::string history_csv(const History& history) {
  std::set<std::string> names;
  for (const auto& epoch : history)
    for (const auto& [name, v] : epoch) names.insert(name);
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out = "epoch";
  for (const std::string& n : names) out += "," + field(n);
  out += "\n";
  for (std::size_t e = 0; e < history.size(); ++e) {
    out += std::to_string(e + 1);
    for (const std::string& n : names) {
      out += ",";
      if (auto it = history[e].find(n); it != history[e].end()) out += number(it->second, 17);
    }
    out += "\n";
  }
  return out;
}

namespace {

void write_text(const std::string& path, const std::string& text, const char* what) {
  check(!path.empty(), what, ": the path is empty");
  detail::write_atomically(path, what, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    check(static_cast<bool>(out), what, ": cannot write '", path, "'");
  });
}

}  // namespace

void write_history_svg(const std::string& path, const History& history, const std::string& title) {
  write_text(path, history_svg(history, title), "write_history_svg");
}

void write_history_csv(const std::string& path, const History& history) {
  write_text(path, history_csv(history), "write_history_csv");
}

}  // namespace glia
