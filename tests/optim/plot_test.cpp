// The training-curve SVG and CSV (glia/optim/plot.hpp): well-formed XML with one curve
// per metric placed by the values, train and validation in one panel per metric, text
// escaped; CSV rows by hand; the files written whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "expect_error.hpp"
#include "glia/optim/plot.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;

// Tags balance and every attribute value is quoted: a small check of well-formed XML
// (no DTD, comments or CDATA in what history_svg writes).
bool well_formed(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([A-Za-z_][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(/?)>)");
  std::size_t at = xml.find("?>");  // after the declaration
  if (xml.rfind("<?xml", 0) != 0 || at == std::string::npos) return why = "no declaration", false;
  at += 2;
  for (std::sregex_iterator it(xml.begin() + long(at), xml.end(), tag), end; it != end; ++it) {
    const std::smatch& m = *it;
    if (m[1] == "/") {
      if (open.empty() || open.back() != m[2])
        return why = "unbalanced </" + m[2].str() + ">", false;
      open.pop_back();
    } else if (m[4] != "/") {
      open.push_back(m[2]);
    }
  }
  if (!open.empty()) return why = "unclosed <" + open.back() + ">", false;
  // Every '<' starts a tag the pattern matched; every '&' an entity.
  std::string stripped = std::regex_replace(xml.substr(at), tag, "");
  if (stripped.find('<') != std::string::npos) return why = "a '<' outside a tag", false;
  if (std::regex_search(stripped, std::regex(R"(&(?!amp;|lt;|gt;|quot;))")))
    return why = "an unescaped '&'", false;
  return true;
}

struct Curve {
  std::string metric;
  std::vector<std::pair<double, double>> points;
};
std::vector<Curve> curves(const std::string& svg) {
  std::vector<Curve> out;
  const std::regex poly(
      R"re(<polyline class="curve" data-metric="([^"]*)"[^>]* points="([^"]*)")re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), poly), end; it != end; ++it) {
    Curve c{(*it)[1], {}};
    std::istringstream in((*it)[2].str());
    for (std::string xy; in >> xy;) {
      auto comma = xy.find(',');
      c.points.emplace_back(std::stod(xy.substr(0, comma)), std::stod(xy.substr(comma + 1)));
    }
    out.push_back(std::move(c));
  }
  return out;
}

History run_history() {
  return {{{"loss", 1.0}, {"accuracy", 0.5}, {"validation_loss", 1.2}},
          {{"loss", 0.5}, {"accuracy", 0.75}, {"validation_loss", 0.9}},
          {{"loss", 0.25}, {"accuracy", 0.9}, {"validation_loss", 0.8}}};
}

TEST(Plot, OneCurvePerMetricPlacedByItsValues) {
  const std::string svg = history_svg(run_history(), "run <1> & co");
  std::string why;
  EXPECT_TRUE(well_formed(svg, why)) << why << "\n" << svg;
  EXPECT_THAT(svg, HasSubstr("run &lt;1&gt; &amp; co"));
  std::vector<Curve> cs = curves(svg);
  ASSERT_EQ(cs.size(), 3u) << svg;
  // Panels in name order: accuracy, then loss with validation_loss beside it.
  EXPECT_EQ(cs[0].metric, "accuracy");
  EXPECT_EQ(cs[1].metric, "loss");
  EXPECT_EQ(cs[2].metric, "validation_loss");
  for (const Curve& c : cs) ASSERT_EQ(c.points.size(), 3u) << c.metric;
  // Epochs evenly along x; in a panel, the smallest value at the bottom, the largest at the
  // top, a value between in proportion (loss 0.5 of 0.25..1.2).
  EXPECT_DOUBLE_EQ(cs[0].points[1].first - cs[0].points[0].first,
                   cs[0].points[2].first - cs[0].points[1].first);
  const double bottom = cs[1].points[2].second, top = cs[2].points[0].second;  // 0.25, 1.2
  EXPECT_GT(bottom, top);  // SVG's y grows downwards
  EXPECT_NEAR(cs[1].points[1].second, bottom - (0.5 - 0.25) / (1.2 - 0.25) * (bottom - top), 1e-3);
  EXPECT_NEAR(cs[2].points[2].second, bottom - (0.8 - 0.25) / (1.2 - 0.25) * (bottom - top), 1e-3);
  // Accuracy's own panel: its extremes at the same bottom and top offsets within it.
  EXPECT_NEAR(cs[0].points[0].second - cs[0].points[2].second, bottom - top, 1e-3);
}

TEST(Plot, GapsNaNsOneEpochAndNothing) {
  History h = {{{"loss", 2.0}}, {{"loss", NAN}, {"mae", 1.0}}, {{"loss", 1.0}, {"mae", 0.5}}};
  std::vector<Curve> cs = curves(history_svg(h));
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].points.size(), 2u);  // loss: epochs 1 and 3, the NaN left out
  EXPECT_EQ(cs[1].points.size(), 2u);  // mae: epochs 2 and 3
  std::vector<Curve> one = curves(history_svg({{{"loss", 3.0}}}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].points.size(), 1u);
  const std::string none = history_svg({});
  std::string why;
  EXPECT_TRUE(well_formed(none, why)) << why;
  EXPECT_THAT(none, HasSubstr("no metric values"));
  EXPECT_TRUE(curves(none).empty());
}

TEST(Plot, CsvRowsAndFiles) {
  History h = {{{"loss", 0.5}, {"acc,top1", 0.25}}, {{"loss", 0.125}}};
  EXPECT_EQ(history_csv(h), "epoch,\"acc,top1\",loss\n1,0.25,0.5\n2,,0.125\n");
  EXPECT_EQ(history_csv({}), "epoch\n");
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("glia_plot_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_history_csv((dir / "h.csv").string(), h);
  write_history_svg((dir / "h.svg").string(), run_history());
  std::ifstream csv(dir / "h.csv");
  std::string text{std::istreambuf_iterator<char>(csv), std::istreambuf_iterator<char>()};
  EXPECT_EQ(text, history_csv(h));
  EXPECT_EQ(fs::file_size(dir / "h.svg"), history_svg(run_history()).size());
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);  // no temporary files left
  testing::expect_error([&] { write_history_svg((dir / "no" / "such.svg").string(), h); },
                        "cannot write");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace glia
