#include "eval/run.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/text_format.h"
#include "eval/npy.h"
#include "format/writer.h"

namespace edgeopt::eval {
namespace {

std::string Num(double v) {
  char buf[64];
  const double a = std::fabs(v);
  if (v == 0 || (a >= 1e-3 && a < 1e5))
    std::snprintf(buf, sizeof(buf), "%.4f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string Ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), ms < 10 ? "%.3f ms" : "%.2f ms", ms);
  return buf;
}

bool NpyCanHold(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kFloat64: case DType::kFloat16: case DType::kInt8: case DType::kUInt8:
    case DType::kInt16: case DType::kUInt16: case DType::kInt32: case DType::kUInt32: case DType::kInt64:
    case DType::kUInt64: case DType::kBool: case DType::kComplex64:
      return true;
    default:
      return false;
  }
}

}  // namespace

HostTensor CopyTensor(const rt::RtTensor& t) {
  HostTensor h;
  h.name = t.name();
  h.type = t.type;
  h.shape = t.shape;
  if (t.type != DType::kString) {
    const size_t bytes = std::min(t.bytes, rt::TensorBytes(t.type, t.shape));
    if (t.data && bytes) h.data.assign(t.data, t.data + bytes);
  }
  if (t.quant && !t.quant->scale.empty()) {
    h.scale = t.quant->scale[0];
    h.zero_point = t.zero_point();
  }
  return h;
}

std::vector<HostTensor> CopyOutputs(rt::Interpreter& interp) {
  std::vector<HostTensor> out;
  for (int i = 0; i < interp.num_outputs(); ++i) out.push_back(CopyTensor(*interp.output(i)));
  return out;
}

ValueStats StatsOf(const HostTensor& t) {
  ValueStats s;
  const int64_t n = t.data.empty() ? 0 : t.num_elements();
  double sum = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const double v = t.Real(i);
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      continue;
    }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
    ++s.count;
  }
  if (s.count == 0) s.min = s.max = 0;
  s.mean = s.count ? sum / s.count : 0;
  return s;
}

bool IsClassifierLike(const std::vector<HostTensor>& outputs) {
  if (outputs.size() != 1) return false;
  const HostTensor& t = outputs[0];
  if (t.type == DType::kString || t.type == DType::kBool || t.data.empty()) return false;
  const auto& s = t.shape;
  if (s.size() == 1) return s[0] > 1;
  if (s.size() == 2) return s[0] == 1 && s[1] > 1;
  return false;
}

std::string DescribeTensor(const HostTensor& t) {
  std::string s = std::string(DTypeName(t.type)) + rt::ShapeToString(t.shape);
  if (t.scale != 0) s += " (scale " + Num(t.scale) + ", zero point " + std::to_string(t.zero_point) + ")";
  return s;
}

std::string LabelCountWarning(size_t num_labels, int64_t num_classes, const std::string& labels_path) {
  if (static_cast<int64_t>(num_labels) == num_classes) return "";
  std::string s = "labels file '" + labels_path + "' has " + std::to_string(num_labels) + " lines but the output has " +
                  std::to_string(num_classes) + " classes; index i is labelled with line i";
  if (static_cast<int64_t>(num_labels) + 1 == num_classes)
    s += " (the model may have a background class 0 that the file lacks)";
  else if (static_cast<int64_t>(num_labels) == num_classes + 1)
    s += " (the file may have a background line 0 that the model lacks)";
  return s;
}

std::string FormatRunReport(const std::vector<LoadedInput>& inputs, const std::vector<HostTensor>& outputs,
                            const RunReportOptions& o) {
  std::string out;
  out += "model   " + Printable(o.model) + "\n";
  for (const LoadedInput& in : inputs)
    out += "input   '" + Printable(in.tensor.name) + "' " + std::string(DTypeName(in.tensor.type)) +
           rt::ShapeToString(in.tensor.shape) + " <- " + Printable(in.source) + "\n";
  out += "invoke  " + Ms(o.invoke_ms) + " (" + std::to_string(o.threads) + (o.threads == 1 ? " thread" : " threads") +
         ", one run, includes cold caches; 'edgeopt bench' measures steady-state latency)\n";

  if (IsClassifierLike(outputs)) {
    const HostTensor& t = outputs[0];
    const int64_t n = t.num_elements();
    const auto top = TopKOf(t, o.top_k);
    out += "output  '" + Printable(t.name) + "' " + DescribeTensor(t) + ": top " + std::to_string(top.size()) + " of " +
           std::to_string(n) + (t.scale != 0 ? " (scores dequantized)" : "") + "\n";
    std::vector<std::string> header = {"rank", "index", "score"};
    if (t.scale != 0) header.push_back("raw");
    if (o.labels) header.push_back("label");
    TextTable table(header);
    table.AlignRight(0);
    table.AlignRight(1);
    table.AlignRight(2);
    if (t.scale != 0) table.AlignRight(3);
    for (size_t r = 0; r < top.size(); ++r) {
      std::vector<std::string> row = {std::to_string(r + 1), std::to_string(top[r].index), Num(top[r].score)};
      if (t.scale != 0) row.push_back(std::to_string(static_cast<long long>(top[r].raw)));
      if (o.labels) {
        const auto& l = *o.labels;
        row.push_back(top[r].index < static_cast<int>(l.size()) ? Printable(l[top[r].index]) : "(no label: beyond the file)");
      }
      table.AddRow(std::move(row));
    }
    out += table.Render("  ");
  } else {
    out += "outputs\n";
    TextTable table({"#", "name", "dtype", "shape", "min", "max", "mean"});
    table.AlignRight(0);
    for (size_t c = 4; c <= 6; ++c) table.AlignRight(c);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const HostTensor& t = outputs[i];
      std::string dtype = std::string(DTypeName(t.type));
      if (t.scale != 0) dtype += " (scale " + Num(t.scale) + ", zp " + std::to_string(t.zero_point) + ")";
      if (t.type == DType::kString || t.data.empty()) {
        table.AddRow({std::to_string(i), Printable(t.name), dtype, rt::ShapeToString(t.shape), "-", "-", "-"});
        continue;
      }
      const ValueStats s = StatsOf(t);
      std::string mean = Num(s.mean);
      if (s.nonfinite) mean += " (" + std::to_string(s.nonfinite) + " NaN/inf)";
      table.AddRow({std::to_string(i), Printable(t.name), dtype, rt::ShapeToString(t.shape), Num(s.min), Num(s.max), mean});
    }
    out += table.Render("  ");
    bool any_quantized = false;
    for (const auto& t : outputs) any_quantized = any_quantized || t.scale != 0;
    if (any_quantized) out += "  (min/max/mean of quantized outputs are dequantized: (q - zero point) * scale)\n";
  }
  for (const std::string& w : o.written) out += "wrote   " + Printable(w) + "\n";
  return out;
}

Expected<std::vector<std::string>> WriteOutputsNpy(const std::string& dir, const std::vector<HostTensor>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!NpyCanHold(outputs[i].type))
      return Unsupported("output " + std::to_string(i) + " '" + outputs[i].name + "' is " +
                         std::string(DTypeName(outputs[i].type)) + ", which .npy cannot hold; nothing written");
  namespace fs = std::filesystem;
  std::error_code ec;
  // Folders this call creates (deepest first), removed again if writing fails.
  std::vector<fs::path> created;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) return IoError("--output-dir '" + dir + "' exists and is not a directory");
  } else {
    for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      created.push_back(p);
      if (p == p.parent_path()) break;
    }
    fs::create_directories(dir, ec);
    if (ec) {
      for (const auto& p : created) fs::remove(p, ec);
      return IoError("cannot create output directory '" + dir + "': " + ec.message());
    }
  }
  std::vector<std::string> finals, temps;
  auto cleanup = [&] {
    for (const auto& t : temps) fs::remove(t, ec);
    for (const auto& p : created) fs::remove(p, ec);  // only removes empty folders
  };
  const std::string suffix = ".partial." + std::to_string(::getpid());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string path = (fs::path(dir) / ("output_" + std::to_string(i) + ".npy")).string();
    const auto bytes = EncodeNpy(outputs[i]);
    Status st = WriteFileAtomically(path + suffix, bytes.data(), bytes.size());
    if (!st.ok()) {
      cleanup();
      return st.WithContext("writing output " + std::to_string(i) + " (nothing written)");
    }
    finals.push_back(path);
    temps.push_back(path + suffix);
  }
  for (size_t i = 0; i < finals.size(); ++i) {
    fs::rename(temps[i], finals[i], ec);
    if (ec) {
      const std::string message = "cannot rename '" + temps[i] + "' to '" + finals[i] + "': " + ec.message();
      for (size_t j = 0; j < i; ++j) fs::remove(finals[j], ec);
      cleanup();
      return IoError(message);
    }
  }
  return finals;
}

}  // namespace edgeopt::eval
