// The HTML report of `edgeopt optimize`: candidate table and two SVG scatter charts. Everything is
// inline (no scripts, fonts or images from elsewhere), so the file opens offline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/text_format.h"
#include "eval/metrics.h"
#include "optimize/auto/auto_optimize.h"

namespace edgeopt::optimize {
namespace {

std::string Esc(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

std::string Num(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over `range`.
double NiceStep(double range, int target) {
  if (!(range > 0)) return 1;
  const double raw = range / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

// "#3" (built by appending: GCC 12 warns falsely about "#" + std::to_string(i)).
std::string Tag(int index) {
  std::string t(1, '#');
  t.append(std::to_string(index));
  return t;
}

int DigitsFor(double step) { return step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9)); }

struct Point {
  double x = 0, y = 0;
  int index = 0;  // candidate number (1-based in the table)
  std::string name;
  bool chosen = false, baseline = false, in_budget = false;
};

struct Box {
  double x0, y0, x1, y1;
  bool Overlaps(const Box& b) const { return x0 < b.x1 && b.x0 < x1 && y0 < b.y1 && b.y0 < y1; }
};

std::string Chart(const std::string& title, const std::string& x_label, const std::vector<Point>& pts, double budget_y,
                  double baseline_y) {
  const double W = 580, H = 400, L = 64, R = 20, T = 40, B = 56;
  const double pw = W - L - R, ph = H - T - B;
  double xmin = 0, xmax = 0, ymin = budget_y, ymax = baseline_y;
  for (const auto& p : pts) {
    xmax = std::max(xmax, p.x);
    ymin = std::min(ymin, p.y);
    ymax = std::max(ymax, p.y);
  }
  if (xmax <= 0) xmax = 1;
  xmax *= 1.12;  // room for labels
  const double ypad = std::max(0.5, (ymax - ymin) * 0.12);
  ymin -= ypad;
  ymax += ypad;
  const double xstep = NiceStep(xmax - xmin, 6), ystep = NiceStep(ymax - ymin, 6);
  xmax = std::ceil(xmax / xstep) * xstep;
  ymin = std::floor(ymin / ystep) * ystep;
  ymax = std::ceil(ymax / ystep) * ystep;
  auto sx = [&](double x) { return L + (x - xmin) / (xmax - xmin) * pw; };
  auto sy = [&](double y) { return T + (ymax - y) / (ymax - ymin) * ph; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " "
    << H << "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"" << Esc(title) << "\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << W << "\" height=\"" << H << "\" fill=\"#ffffff\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" << Esc(title)
    << "</text>\n";
  // Grid and ticks.
  const int xd = DigitsFor(xstep), yd = DigitsFor(ystep);
  for (double x = xmin; x <= xmax + xstep * 1e-6; x += xstep) {
    s << "<line x1=\"" << sx(x) << "\" y1=\"" << T << "\" x2=\"" << sx(x) << "\" y2=\"" << T + ph
      << "\" stroke=\"#e4e4e4\"/>\n";
    s << "<text x=\"" << sx(x) << "\" y=\"" << T + ph + 16 << "\" text-anchor=\"middle\" fill=\"#333\">" << Num(x, xd)
      << "</text>\n";
  }
  for (double y = ymin; y <= ymax + ystep * 1e-6; y += ystep) {
    s << "<line x1=\"" << L << "\" y1=\"" << sy(y) << "\" x2=\"" << L + pw << "\" y2=\"" << sy(y)
      << "\" stroke=\"#e4e4e4\"/>\n";
    s << "<text x=\"" << L - 6 << "\" y=\"" << sy(y) + 4 << "\" text-anchor=\"end\" fill=\"#333\">" << Num(y, yd)
      << "</text>\n";
  }
  s << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#888\"/>\n";
  s << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 14 << "\" text-anchor=\"middle\">" << Esc(x_label) << "</text>\n";
  s << "<text transform=\"translate(16," << T + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">accuracy (%)</text>\n";
  // Budget: the lowest accuracy accepted.
  s << "<line x1=\"" << L << "\" y1=\"" << sy(budget_y) << "\" x2=\"" << L + pw << "\" y2=\"" << sy(budget_y)
    << "\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
  s << "<text x=\"" << L + pw - 4 << "\" y=\"" << sy(budget_y) + 14 << "\" text-anchor=\"end\" fill=\"#d62728\">budget: "
    << Num(budget_y, 2) << "%</text>\n";
  // Points, then labels placed greedily where they do not overlap.
  std::vector<Box> taken;
  for (const auto& p : pts) taken.push_back({sx(p.x) - 6, sy(p.y) - 6, sx(p.x) + 6, sy(p.y) + 6});
  for (const auto& p : pts) {
    const char* fill = p.baseline ? "#7f7f7f" : p.in_budget ? "#1f77b4" : "#ff9f40";
    if (p.chosen) {
      s << "<circle cx=\"" << sx(p.x) << "\" cy=\"" << sy(p.y) << "\" r=\"10\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"3\"/>\n";
    }
    s << "<circle cx=\"" << sx(p.x) << "\" cy=\"" << sy(p.y) << "\" r=\"5\" fill=\"" << fill
      << "\" stroke=\"#222\" stroke-width=\"0.8\"><title>" << Esc(Tag(p.index) + " " + p.name) << "</title></circle>\n";
  }
  for (const auto& p : pts) {
    const std::string full = Tag(p.index) + " " + p.name;
    const std::string shortl = Tag(p.index);
    bool placed = false;
    for (const std::string& text : {full, shortl}) {
      const double tw = 6.6 * static_cast<double>(text.size());
      const double cx = sx(p.x), cy = sy(p.y);
      // Right, left, then right above/below.
      const double offsets[][2] = {{9, 4}, {-9 - tw, 4}, {9, -10}, {9, 18}, {-9 - tw, -10}, {-9 - tw, 18}, {-tw / 2, -12}, {-tw / 2, 22}};
      for (const auto& off : offsets) {
        const double x0 = cx + off[0], yb = cy + off[1];
        Box b{x0, yb - 11, x0 + tw, yb + 2};
        if (b.x0 < L || b.x1 > L + pw || b.y0 < T || b.y1 > T + ph) continue;
        bool clash = false;
        for (const auto& t : taken) clash = clash || b.Overlaps(t);
        if (clash) continue;
        taken.push_back(b);
        s << "<text x=\"" << x0 << "\" y=\"" << yb << "\" fill=\"" << (p.chosen ? "#1a7a1a" : "#222") << "\""
          << (p.chosen ? " font-weight=\"bold\"" : "") << ">" << Esc(text) << "</text>\n";
        placed = true;
        break;
      }
      if (placed) break;
    }
  }
  // Legend.
  const double lx = L + 8, ly = T + 10;
  s << "<g font-size=\"11\">";
  s << "<rect x=\"" << lx - 4 << "\" y=\"" << ly - 8 << "\" width=\"150\" height=\"58\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>";
  s << "<circle cx=\"" << lx + 4 << "\" cy=\"" << ly << "\" r=\"4\" fill=\"#7f7f7f\"/><text x=\"" << lx + 14 << "\" y=\"" << ly + 4 << "\">float model</text>";
  s << "<circle cx=\"" << lx + 4 << "\" cy=\"" << ly + 14 << "\" r=\"4\" fill=\"#1f77b4\"/><text x=\"" << lx + 14 << "\" y=\"" << ly + 18 << "\">within budget</text>";
  s << "<circle cx=\"" << lx + 4 << "\" cy=\"" << ly + 28 << "\" r=\"4\" fill=\"#ff9f40\"/><text x=\"" << lx + 14 << "\" y=\"" << ly + 32 << "\">over budget</text>";
  s << "<circle cx=\"" << lx + 4 << "\" cy=\"" << ly + 42 << "\" r=\"6\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2.5\"/><text x=\"" << lx + 14 << "\" y=\"" << ly + 46 << "\">chosen</text>";
  s << "</g>\n</svg>\n";
  return s.str();
}

}  // namespace

std::string AutoReportHtml(const AutoOptimizeResult& r, const ReportInfo& info) {
  std::vector<Point> by_latency, by_size;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    if (!c.error.empty()) continue;
    Point p;
    p.index = static_cast<int>(i) + 1;
    p.name = c.name;
    p.y = c.accuracy;
    p.chosen = c.chosen;
    p.baseline = i == 0;
    p.in_budget = c.within_budget;
    p.x = c.latency_ms;
    by_latency.push_back(p);
    p.x = static_cast<double>(c.size_bytes) / 1024.0;
    by_size.push_back(p);
  }
  const double budget = r.baseline_accuracy - r.max_drop;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>edgeopt optimize: "
    << Esc(info.input) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:24px;color:#222;max-width:1240px}\n"
    << "h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:24px 0 8px}\n"
    << ".charts{display:flex;flex-wrap:wrap;gap:16px}.charts svg{border:1px solid #ddd}\n"
    << "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}\n"
    << "th{background:#f2f2f2}td.l{text-align:left}tr.chosen td{background:#e6f5e6;font-weight:bold}\n"
    << "tr.over td{color:#a05a00}tr.failed td{color:#999}code{font-size:12px}\n"
    << "dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:14px}dt{font-weight:bold}dd{margin:0}\n"
    << "</style>\n</head>\n<body>\n";
  h << "<h1>edgeopt optimize</h1>\n<dl>\n";
  h << "<dt>model</dt><dd>" << Esc(info.input) << "</dd>\n";
  if (!info.output.empty()) h << "<dt>written</dt><dd>" << Esc(info.output) << "</dd>\n";
  h << "<dt>accuracy</dt><dd>" << Esc(r.metric) << " on " << r.eval_samples << " evaluation samples";
  if (!info.evaluation.empty()) h << " (" << Esc(info.evaluation) << ")";
  h << "</dd>\n";
  h << "<dt>calibration</dt><dd>" << r.calibration_samples << " samples";
  if (!info.calibration.empty()) h << " (" << Esc(info.calibration) << ")";
  h << "</dd>\n";
  h << "<dt>budget</dt><dd>at most " << Num(r.max_drop, 2) << " points below the float model's " << Num(r.baseline_accuracy, 2)
    << "%, i.e. at least " << Num(budget, 2) << "%</dd>\n";
  h << "<dt>objective</dt><dd>" << (r.objective == Objective::kSize ? std::string("smallest ") + SizeMetricName(r.size_metric)
                                                                     : std::string("lowest latency (our runtime, median)"))
    << "</dd>\n";
  if (r.chosen >= 0) {
    const auto& c = r.candidates[static_cast<size_t>(r.chosen)];
    const auto& f = r.candidates[0];
    h << "<dt>chosen</dt><dd><b>#" << r.chosen + 1 << " " << Esc(c.name) << "</b>: " << Esc(HumanBytes(c.size_bytes)) << " ("
      << Num(100.0 * c.size_bytes / std::max<size_t>(1, f.size_bytes), 1) << "% of float), " << Num(c.latency_ms, 3)
      << " ms, " << Num(c.accuracy, 2) << "% (drop " << Num(c.drop, 2) << " points)</dd>\n";
  }
  if (!info.command.empty()) h << "<dt>command</dt><dd><code>" << Esc(info.command) << "</code></dd>\n";
  h << "</dl>\n";
  h << "<h2>Accuracy against latency and size</h2>\n<div class=\"charts\">\n";
  h << Chart("Accuracy vs latency", "latency per inference (ms, median, 1 thread)", by_latency, budget, r.baseline_accuracy);
  h << Chart("Accuracy vs size", std::string(SizeMetricName(r.size_metric)) + " (KiB)", by_size, budget, r.baseline_accuracy);
  h << "</div>\n";
  h << "<h2>Candidates</h2>\n<table>\n<tr><th>#</th><th>candidate</th><th>" << Esc(SizeMetricName(r.size_metric))
    << "</th><th>vs float</th><th>latency (ms)</th><th>accuracy (%)</th><th>drop (points)</th><th>output SNR</th>"
       "<th>budget</th><th>how</th></tr>\n";
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    const char* cls = !c.error.empty() ? "failed" : c.chosen ? "chosen" : !c.within_budget ? "over" : "";
    h << "<tr class=\"" << cls << "\"><td>" << i + 1 << "</td><td class=\"l\">" << Esc(c.name) << (c.chosen ? " (chosen)" : "")
      << "</td>";
    if (!c.error.empty()) {
      h << "<td class=\"l\" colspan=\"7\">failed: " << Esc(c.error) << "</td><td class=\"l\"><code>" << Esc(c.recipe)
        << "</code></td></tr>\n";
      continue;
    }
    h << "<td>" << Esc(HumanBytes(c.size_bytes)) << "</td><td>"
      << Num(100.0 * c.size_bytes / std::max<size_t>(1, r.candidates[0].size_bytes), 1) << "%</td><td>" << Num(c.latency_ms, 3)
      << "</td><td>" << Num(c.accuracy, 2) << "</td><td>" << Num(c.drop, 2) << "</td><td>" << Esc(eval::FormatSnr(c.output_snr_db))
      << "</td><td>" << (c.within_budget ? "within" : "over") << "</td><td class=\"l\"><code>" << Esc(c.recipe) << "</code>";
    if (!c.float_layers.empty()) {
      h << "<br>float layers: ";
      for (size_t k = 0; k < c.float_layers.size(); ++k) h << (k ? ", " : "") << Esc(c.float_layers[k]);
    }
    h << "</td></tr>\n";
  }
  h << "</table>\n";
  if (!r.notes.empty()) {
    h << "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : r.notes) h << "<li>" << Esc(n) << "</li>\n";
    h << "</ul>\n";
  }
  h << "<p style=\"font-size:12px;color:#666\">Latency: median of single-threaded invokes on edgeopt's runtime on the machine "
       "that ran the command. Sizes are of the .tflite files as written"
    << (r.size_metric == SizeMetric::kRaw ? "" : ", compressed") << ". The drop is in percentage points.</p>\n";
  h << "</body>\n</html>\n";
  return h.str();
}

}  // namespace edgeopt::optimize
