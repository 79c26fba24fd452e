// report.html: self-contained (every image a data: URI of the file it shows, no external resource, a CSP
// forbidding any), every relative link pointing at a file that exists, every run's config.toml, the
// probes side by side per group (and their absence handled); its encoders on known vectors. Rendering in
// a real browser: tests/experiments/report_browser_test.sh.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "experiments/report/report.hpp"
#include "experiments/report/report_detail.hpp"
#include "report_fixture.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;
namespace rd = pelab::report_detail;

namespace {

const std::vector<std::size_t> kLens = {8, 16, 32};

// A valid 1x1 PNG (what a probe would write; any PNG will do).
const std::string kPng(
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52"
    "\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4"
    "\x89\x00\x00\x00\x0d\x49\x44\x41\x54\x78\x9c\x63\xd0\xa8\x38\xf1"
    "\x1f\x00\x04\x9c\x02\x68\x6e\x1b\xe5\xca\x00\x00\x00\x00\x49\x45"
    "\x4e\x44\xae\x42\x60\x82",
    70);

void build(const fs::path& dir) {
  for (const char* enc : {"rope", "sinusoidal"})
    for (int seed : {1, 2}) {
      FakeRun f;
      f.encoding = enc;
      f.seed = seed;
      f.acc = {{8, 0.9}, {16, 0.8}, {32, 0.25}};
      f.chance = {{8, 0.2}, {16, 0.15}, {32, 0.125}};
      f.held_out = {{100, 0.5}, {200, 0.95}};
      f.config += "# run " + f.dir_name() + " <&>\n";
      write_fake_run(dir, f, kLens);
    }
  write(dir / "encoding.name=rope,train.seed=3" / "metrics.jsonl", "{\"step\": 50, \"split\": \"train\"}\n");
  write(dir / "encoding.name=rope,train.seed=3" / "config.toml", "[train]\nsteps = 600\n");
}

// The values of every ATTR="..." in the page (std::regex overflows its stack on 100 kB data: URIs).
std::vector<std::string> attr_values(const std::string& html, const std::string& attr) {
  std::vector<std::string> out;
  const std::string open = " " + attr + "=\"";
  for (std::size_t p = html.find(open); p != std::string::npos; p = html.find(open, p + 1)) {
    const std::size_t b = p + open.size(), e = html.find('"', b);
    if (e == std::string::npos) break;
    out.push_back(html.substr(b, e - b));
  }
  return out;
}

// Relative links (not in-page anchors).
std::vector<std::string> relative_links(const std::string& html) {
  std::vector<std::string> out;
  for (const std::string& h : attr_values(html, "href"))
    if (!h.empty() && h[0] != '#') out.push_back(h);
  return out;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  return out;
}

}  // namespace

TEST_CASE("report html encoders: base64 (RFC 4648 vectors), escaping, relative URLs") {
  CHECK(rd::base64("") == "");
  CHECK(rd::base64("f") == "Zg==");
  CHECK(rd::base64("fo") == "Zm8=");
  CHECK(rd::base64("foo") == "Zm9v");
  CHECK(rd::base64("foob") == "Zm9vYg==");
  CHECK(rd::base64("fooba") == "Zm9vYmE=");
  CHECK(rd::base64("foobar") == "Zm9vYmFy");
  CHECK(rd::base64(std::string("\xff\xfe\x00", 3)) == "//4A");
  CHECK(rd::html_escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  CHECK(rd::url_path("encoding.name=rope,train.seed=1/train.log") ==
        "encoding.name%3Drope%2Ctrain.seed%3D1/train.log");
  CHECK(rd::url_path("a b/#?%.json") == "a%20b/%23%3F%25.json");
}

TEST_CASE("report html is self-contained, links what exists and shows every config") {
  TempDir t;
  build(t.dir);
  const ReportResult res = write_report(t.dir.string());
  const fs::path page = t.dir / "report.html";
  REQUIRE(fs::exists(page));
  CHECK(res.files_written.back() == page.string());
  const std::string html = slurp(page);
  CHECK(html.compare(0, 15, "<!DOCTYPE html>") == 0);
  CHECK_THAT(html, Contains("Content-Security-Policy\" content=\"default-src 'none'; img-src data:;"));
  CHECK_THAT(html, !Contains("<script"));
  CHECK_THAT(html, !Contains("http://"));
  CHECK_THAT(html, !Contains("https://"));
  CHECK_THAT(html, !Contains("url("));
  // Every image is inline, and every rendered plot is there byte for byte.
  const auto srcs = attr_values(html, "src");
  for (const std::string& s : srcs) CHECK(s.rfind("data:image/png;base64,", 0) == 0);
  if (have_gnuplot()) {
    std::size_t pngs = 0;
    for (const auto& e : fs::directory_iterator(t.dir / "plots"))
      if (e.path().extension() == ".png") {
        ++pngs;
        INFO(e.path());
        CHECK_THAT(html, Contains("data:image/png;base64," + rd::base64(slurp(e.path())) + "\""));
      }
    CHECK(pngs == 3);  // length generalization, held-out curves, training curves
    CHECK(srcs.size() == pngs);
  }
  // Tables: both accuracy tables (with chance rows), steps to target.
  CHECK_THAT(html, Contains("<h3>token accuracy (%): copy, train_len 16</h3>"));
  CHECK_THAT(html, Contains("<h3>exact match (%): copy, train_len 16</h3>"));
  CHECK_THAT(html, Contains("<tr class=\"ref\"><td>chance</td><td class=\"num\">20.0</td>"));
  CHECK_THAT(html, Contains("<h3>steps to target: copy, train_len 16</h3>"));
  CHECK_THAT(html, Contains("<td>rope</td><td class=\"num\">token_acc ≥ 90%</td><td class=\"num\">200 ± 0</td>"));
  // Every relative link points at a file that exists (runs' logs, plot data, CSVs).
  const auto hrefs = relative_links(html);
  CHECK(hrefs.size() > 20);
  for (const std::string& h : hrefs) {
    INFO(h);
    CHECK(fs::is_regular_file(t.dir / percent_decode(h)));
  }
  for (const char* f : {"train.log", "metrics.jsonl", "eval.json", "config.toml"})
    CHECK_THAT(html, Contains(std::string("href=\"encoding.name%3Dsinusoidal%2Ctrain.seed%3D2/") + f + "\""));
  // The resolved config of every run, escaped; the unfinished run listed with its config.
  for (const char* run : {"encoding.name=rope,train.seed=1", "encoding.name=rope,train.seed=2",
                          "encoding.name=sinusoidal,train.seed=1", "encoding.name=sinusoidal,train.seed=2"})
    CHECK_THAT(html, Contains(std::string("# run ") + run + " &lt;&amp;&gt;"));
  CHECK_THAT(html, Contains("early_stop_metric = &quot;token_acc&quot;"));
  CHECK_THAT(html, Contains("<code>encoding.name=rope,train.seed=3</code>: running or interrupted"));
  CHECK_THAT(html, Contains("(unfinished)</summary><pre>[train]\nsteps = 600\n</pre>"));
  // No probes yet: said so.
  CHECK_THAT(html, Contains("No run has probes"));
}

TEST_CASE("report html places each probe side by side per group") {
  TempDir t;
  build(t.dir);
  // rope: seeds 1 and 2 have probes (seed 1, the first in grid order, is shown); sinusoidal: only seed 2,
  // without entropy; a file that is not a PNG is left out with a warning.
  for (const char* run : {"encoding.name=rope,train.seed=1", "encoding.name=rope,train.seed=2"}) {
    write(t.dir / run / "probe" / "attention_L0.png", kPng);
    write(t.dir / run / "probe" / "attention_L0.json", "{\"title\": \"Attention maps, layer 0\", \"heads\": 2}");
    write(t.dir / run / "probe" / "entropy.png", kPng);
    write(t.dir / run / "probe" / "entropy.csv", "length,entropy\n16,1.5\n");
  }
  const std::string sin = "encoding.name=sinusoidal,train.seed=2";
  write(t.dir / sin / "probe" / "attention_L0.png", kPng);
  write(t.dir / sin / "probe" / "attention_L0.json", "not json: no title, still shown");
  write(t.dir / sin / "probe" / "broken.png", "not a png");
  ReportOptions opt;
  opt.gnuplot = "/nonexistent/gnuplot";  // the plots are not what is checked
  const ReportResult res = write_report(t.dir.string(), opt);
  const std::string html = slurp(t.dir / "report.html");
  const std::string probes = html.substr(html.find("<h2 id=\"probes\">"), html.find("<h2 id=\"runs\">") - html.find("<h2 id=\"probes\">"));
  INFO(probes);
  CHECK_THAT(probes, Contains("<h3 id=\"probe-attention_L0\">Attention maps, layer 0</h3>"));
  CHECK_THAT(probes, Contains("<h3 id=\"probe-entropy\">entropy</h3>"));
  CHECK_THAT(probes, Contains("grid-template-columns: repeat(2, minmax(0, 1fr))"));
  CHECK_THAT(probes, Contains("rope: <code>encoding.name=rope,train.seed=1</code>; sinusoidal: <code>" + sin));
  // The probe images: attention for both groups, entropy for rope only; the broken file is not an image.
  CHECK(count_of(probes, "data:image/png;base64," + rd::base64(kPng) + "\"") == 3);
  CHECK(count_of(html, "<img ") == 3);  // no plot rendered, so these are all
  CHECK_THAT(probes, Contains("<div class=\"missing\">sinusoidal: no entropy</div>"));
  CHECK_THAT(probes, Contains(sin + "/probe/broken.png is not a PNG"));
  CHECK_THAT(probes, Contains("href=\"encoding.name%3Drope%2Ctrain.seed%3D1/probe/attention_L0.json\""));
  CHECK_THAT(probes, Contains("href=\"encoding.name%3Drope%2Ctrain.seed%3D1/probe/entropy.csv\""));
  CHECK_THAT(probes, !Contains("train.seed%3D2/probe/entropy"));  // rope's seed 2 is not the one shown
  bool warned = false;
  for (const std::string& w : res.warnings) warned = warned || w.find("broken.png is not a PNG") != std::string::npos;
  CHECK(warned);
  // summary.md links them too.
  const std::string md = slurp(t.dir / "summary.md");
  CHECK_THAT(md, Contains("## Probes"));
  CHECK_THAT(md, Contains("[attention_L0](encoding.name%3Drope%2Ctrain.seed%3D1/probe/attention_L0.png)"));
  // Plots not rendered: said so, with links to their data and scripts.
  CHECK_THAT(html, Contains("length_generalization.png was not rendered"));
}

TEST_CASE("report html of a single run directory links its own files") {
  TempDir t;
  FakeRun f;
  f.acc = {{8, 0.9}, {16, 0.8}, {32, 0.25}};
  write_fake_run(t.dir, f, kLens);
  const fs::path run = t.dir / f.dir_name();
  write(run / "probe" / "entropy.png", kPng);
  ReportOptions opt;
  opt.plots = false;
  write_report(run.string(), opt);
  const std::string html = slurp(run / "report.html");
  CHECK_THAT(html, Contains("<a href=\"train.log\">train.log</a>"));
  CHECK_THAT(html, Contains("<a href=\"config.toml\">config.toml</a>"));
  CHECK_THAT(html, Contains("Plots were not requested"));
  CHECK(count_of(html, "<img ") == 1);
  for (const std::string& h : relative_links(html)) {
    INFO(h);
    CHECK(fs::is_regular_file(run / percent_decode(h)));
  }
}
