#include "support/conformance.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "support/core/model_files.h"
#include "support/output_guards.h"
#include "support/tflite_oracle.h"

namespace fs = std::filesystem;

namespace edgeopt::testing {
namespace {

// TfLiteType numbering (the C API) differs from the schema's TensorType (our DType).
int ToOracleType(DType t) {
  switch (t) {
    case DType::kFloat32: return kOracleFloat32;
    case DType::kInt32: return kOracleInt32;
    case DType::kUInt8: return kOracleUInt8;
    case DType::kInt64: return kOracleInt64;
    case DType::kString: return kOracleString;
    case DType::kBool: return kOracleBool;
    case DType::kInt16: return kOracleInt16;
    case DType::kComplex64: return kOracleComplex64;
    case DType::kInt8: return kOracleInt8;
    case DType::kFloat16: return kOracleFloat16;
    case DType::kFloat64: return kOracleFloat64;
    case DType::kComplex128: return kOracleComplex128;
    case DType::kUInt64: return kOracleUInt64;
    case DType::kUInt32: return kOracleUInt32;
    case DType::kUInt16: return 17;
    default: return kOracleNoType;
  }
}

DType FromOracleType(int t) {
  for (int d = 0; d < kNumDTypes; ++d)
    if (ToOracleType(static_cast<DType>(d)) == t) return static_cast<DType>(d);
  return DType::kFloat32;
}

bool IsQuantizedLsbType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }

std::string ShapeStr(const std::vector<int32_t>& s) { return rt::ShapeToString(s); }

}  // namespace

const char* OracleName(Oracle o) {
  switch (o) {
    case Oracle::kTflite29: return "tflite-2.9";
    case Oracle::kLiteRtJs: return "litert.js";
    default: return "auto";
  }
}

int64_t TensorValue::num_elements() const {
  int64_t n = 1;
  for (int32_t d : shape) n *= d;
  return n;
}

double TensorValue::At(int64_t i) const {
  const uint8_t* p = data.data();
  switch (type) {
    case DType::kFloat32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kFloat64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::kFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return HalfToFloat(v); }
    case DType::kInt8: return static_cast<int8_t>(p[i]);
    case DType::kUInt8: return p[i];
    case DType::kBool: return p[i] != 0;
    case DType::kInt16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case DType::kUInt16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kUInt32: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DType::kUInt64: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DType::kComplex64: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }  // element i of the float pair array
    default: return 0;
  }
}

std::string CompareReport::Summary() const {
  std::ostringstream s;
  s << (ok ? "OK" : "FAIL") << " oracle=" << oracle;
  if (!error.empty()) s << " error: " << error;
  for (const auto& o : outputs) {
    s << "\n  output '" << o.name << "' " << ShapeStr(o.shape) << " " << DTypeName(o.type) << ": max error "
      << o.max_abs_error << (IsQuantizedLsbType(o.type) ? " LSB" : "") << " (reference range " << o.reference_range
      << "), " << o.mismatches << " over tolerance" << (o.problem.empty() ? "" : " — " + o.problem);
  }
  return s.str();
}

std::vector<TensorValue> RandomInputs(const Graph& g, const CompareOptions& opts) {
  std::mt19937_64 rng(opts.seed);
  std::vector<TensorValue> out;
  const Subgraph& sg = g.main();
  for (int32_t idx : sg.inputs) {
    const Tensor& t = sg.tensors[idx];
    TensorValue v;
    v.name = t.name;
    v.type = t.type;
    v.shape = t.shape;
    const size_t n = static_cast<size_t>(t.num_elements());
    double lo = opts.float_lo, hi = opts.float_hi;
    if (!IsFloatType(t.type)) {
      const bool quantized = t.is_quantized();
      lo = quantized ? -1e9 : opts.int_lo;  // clamped to the type's range
      hi = quantized ? 1e9 : opts.int_hi;
    }
    v.data = RandomBytesOfType(rng, t.type, n, lo, hi);
    out.push_back(std::move(v));
  }
  return out;
}

Expected<std::vector<TensorValue>> InvokeWith(rt::Interpreter& interp, const std::vector<TensorValue>& inputs) {
  if (static_cast<int>(inputs.size()) != interp.num_inputs())
    return InvalidArgument("model has " + std::to_string(interp.num_inputs()) + " inputs, given " +
                           std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (interp.input(static_cast<int>(i))->shape != inputs[i].shape)
      RETURN_IF_ERROR(interp.ResizeInput(static_cast<int>(i), inputs[i].shape));
  }
  RETURN_IF_ERROR(interp.AllocateTensors());
  OutputGuards guards;  // a kernel writing past its output fails the run
  RETURN_IF_ERROR(guards.Bind(interp));
  for (size_t i = 0; i < inputs.size(); ++i) {
    rt::RtTensor* t = interp.input(static_cast<int>(i));
    if (t->type != inputs[i].type)
      return InvalidArgument("input " + std::to_string(i) + " is " + std::string(DTypeName(t->type)) + ", given " +
                             std::string(DTypeName(inputs[i].type)));
    if (inputs[i].data.size() != t->bytes)
      return InvalidArgument("input " + std::to_string(i) + " needs " + std::to_string(t->bytes) + " bytes, given " +
                             std::to_string(inputs[i].data.size()));
    if (t->bytes) std::memcpy(t->data, inputs[i].data.data(), t->bytes);
  }
  RETURN_IF_ERROR(interp.Invoke());
  RETURN_IF_ERROR(guards.Check());
  std::vector<TensorValue> out;
  for (int i = 0; i < interp.num_outputs(); ++i) {
    const rt::RtTensor* t = interp.output(i);
    TensorValue v;
    v.name = t->name();
    v.type = t->type;
    v.shape = t->shape;
    // String outputs: the whole packed buffer (count, offsets, bytes).
    const size_t bytes = t->type == DType::kString ? t->bytes : DTypeBytes(t->type, static_cast<size_t>(t->num_elements()));
    if (bytes) v.data.assign(t->data, t->data + bytes);
    v.scale = t->scale();
    v.zero_point = t->zero_point();
    out.push_back(std::move(v));
  }
  RETURN_IF_ERROR(guards.Release(interp));
  return out;
}

Expected<std::vector<TensorValue>> RunEdgeopt(std::shared_ptr<const rt::Model> model,
                                              const std::vector<TensorValue>& inputs,
                                              const rt::InterpreterOptions& options) {
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model, options));
  return InvokeWith(*interp, inputs);
}

std::string FusedDiffersFromUnfused(std::shared_ptr<const rt::Model> model, const std::vector<TensorValue>& inputs,
                                    int threads) {
  rt::InterpreterOptions fused, plain;
  fused.num_threads = plain.num_threads = threads;
  plain.fuse_ops = false;
  auto a = RunEdgeopt(model, inputs, fused);
  if (!a.ok()) return "fused: " + a.status().ToString();
  auto b = RunEdgeopt(model, inputs, plain);
  if (!b.ok()) return "unfused: " + b.status().ToString();
  if (a->size() != b->size()) return "different output counts";
  for (size_t o = 0; o < a->size(); ++o)
    if ((*a)[o].data != (*b)[o].data) return "output " + std::to_string(o) + " differs";
  return "";
}

bool Tflite29Available() { return TfliteOracle::LibraryPresent(); }

Expected<std::vector<TensorValue>> RunTflite29(const std::vector<uint8_t>& model_bytes,
                                               const std::vector<TensorValue>& inputs, int threads, bool xnnpack,
                                               uint32_t xnnpack_flags) {
  OracleOptions o;
  o.threads = threads;
  o.xnnpack = xnnpack;
  o.xnnpack_flags = xnnpack_flags;
  ASSIGN_OR_RETURN(auto session, OracleSession::CreateFromBuffer(model_bytes.data(), model_bytes.size(), o));
  if (session->num_inputs() != inputs.size())
    return InvalidArgument("reference sees " + std::to_string(session->num_inputs()) + " inputs, given " +
                           std::to_string(inputs.size()));
  auto meta = session->inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int> shape(inputs[i].shape.begin(), inputs[i].shape.end());
    if (meta[i].shape != shape) RETURN_IF_ERROR(session->ResizeInput(static_cast<int>(i), shape));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    RETURN_IF_ERROR(session->SetInput(static_cast<int>(i), inputs[i].data.data(), inputs[i].data.size()));
  RETURN_IF_ERROR(session->Invoke());
  ASSIGN_OR_RETURN(auto outs, session->GetOutputs());
  std::vector<TensorValue> result;
  for (auto& o2 : outs) {
    TensorValue v;
    v.name = o2.name;
    v.type = FromOracleType(o2.type);
    v.shape.assign(o2.shape.begin(), o2.shape.end());
    v.data = std::move(o2.data);
    v.scale = o2.scale;
    v.zero_point = o2.zero_point;
    result.push_back(std::move(v));
  }
  return result;
}

bool LiteRtJsAvailable() {
  return FileExists(SourceDir() + "/.cache/litertjs/node_modules/@litertjs/core/package.json") &&
         std::system("node --version >/dev/null 2>&1") == 0;
}

Expected<std::vector<TensorValue>> RunLiteRtJs(const std::string& model_path, const std::vector<TensorValue>& inputs) {
  if (!LiteRtJsAvailable()) return Unsupported("LiteRT.js is not installed (run scripts/setup.sh)");
  static int counter = 0;
  const std::string dir = MakeTempDir("litertjs_" + std::to_string(counter++));
  const std::string in_dir = dir + "/in", out_dir = dir + "/out";
  fs::create_directories(in_dir);
  fs::create_directories(out_dir);
  nlohmann::json spec = nlohmann::json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    spec.push_back({{"dtype", OracleTypeName(ToOracleType(inputs[i].type))}, {"shape", inputs[i].shape}});
    std::ofstream f(in_dir + "/input_" + std::to_string(i) + ".bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(inputs[i].data.data()), static_cast<std::streamsize>(inputs[i].data.size()));
  }
  std::ofstream(in_dir + "/inputs.json") << spec.dump();
  const std::string log = dir + "/log.txt";
  const std::string cmd = "node '" + SourceDir() + "/tests/support/litertjs_runner.mjs' '" + model_path + "' '" + in_dir +
                          "' '" + out_dir + "' > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream lf(log);
    std::string text((std::istreambuf_iterator<char>(lf)), {});
    fs::remove_all(dir);
    return Unsupported("LiteRT.js failed on '" + model_path + "': " + text);
  }
  std::ifstream jf(out_dir + "/outputs.json");
  nlohmann::json outs = nlohmann::json::parse(jf, nullptr, false);
  if (outs.is_discarded()) {
    fs::remove_all(dir);
    return Internal("LiteRT.js runner wrote unreadable outputs.json");
  }
  std::vector<TensorValue> result;
  for (const auto& o : outs["outputs"]) {
    TensorValue v;
    v.name = o.value("name", "");
    DType dt = DType::kFloat32;
    ParseDType(o.value("dtype", "float32"), &dt);
    v.type = dt;
    for (const auto& d : o["shape"]) v.shape.push_back(d.get<int32_t>());
    v.data = ReadFileBytes(out_dir + "/" + o.value("file", "output_" + std::to_string(result.size()) + ".bin"));
    result.push_back(std::move(v));
  }
  fs::remove_all(dir);
  return result;
}

CompareReport CompareOutputs(const std::vector<TensorValue>& ours, const std::vector<TensorValue>& ref,
                             const CompareOptions& opts) {
  CompareReport r;
  r.ok = true;
  if (ours.size() != ref.size()) {
    r.ok = false;
    r.error = "edgeopt produced " + std::to_string(ours.size()) + " outputs, the reference " + std::to_string(ref.size());
    return r;
  }
  for (size_t k = 0; k < ours.size(); ++k) {
    const TensorValue& a = ours[k];
    const TensorValue& b = ref[k];
    OutputReport o;
    o.name = a.name;
    o.type = a.type;
    o.shape = a.shape;
    if (a.type != b.type) {
      o.ok = false;
      o.problem = std::string("type ") + std::string(DTypeName(a.type)) + " vs reference " + std::string(DTypeName(b.type));
    } else if (a.shape != b.shape) {
      o.ok = false;
      o.problem = "shape " + ShapeStr(a.shape) + " vs reference " + ShapeStr(b.shape);
    } else if (a.type == DType::kString) {  // packed string buffers: equal bytes or a mismatch
      o.ok = a.data == b.data;
      if (!o.ok) {
        o.mismatches = 1;
        o.problem = "string contents differ";
      }
    } else if (a.data.size() != b.data.size()) {
      o.ok = false;
      o.problem = "byte size differs";
    } else {
      const int64_t n = a.num_elements();
      double ref_max = 0;
      for (int64_t i = 0; i < n; ++i) ref_max = std::max(ref_max, std::fabs(b.At(i)));
      o.reference_range = ref_max;
      const bool is_float = IsFloatType(a.type) || a.type == DType::kComplex64;
      const int64_t count = a.type == DType::kComplex64 ? n * 2 : n;
      for (int64_t i = 0; i < count; ++i) {
        const double x = a.At(i), y = b.At(i);
        if (std::isnan(x) && std::isnan(y)) continue;
        const double err = std::fabs(x - y);
        o.max_abs_error = std::max(o.max_abs_error, std::isnan(err) ? INFINITY : err);
        bool bad;
        if (is_float) {
          bad = !(err <= opts.atol + opts.rtol * ref_max) && !(std::isinf(x) && x == y);
        } else if (IsQuantizedLsbType(a.type)) {
          bad = err > opts.max_lsb;
        } else {
          bad = err != 0;
        }
        if (bad) ++o.mismatches;
      }
      o.ok = o.mismatches == 0;
    }
    if (!o.ok) r.ok = false;
    r.outputs.push_back(std::move(o));
  }
  return r;
}

namespace {

CompareReport CompareImpl(const std::vector<uint8_t>& bytes, const std::string& path_or_empty,
                          std::shared_ptr<const rt::Model> model, const CompareOptions& opts,
                          const std::vector<TensorValue>& inputs) {
  CompareReport report;
  rt::InterpreterOptions io;
  io.num_threads = opts.threads;
  io.reference_kernels_only = opts.reference_kernels_only;
  auto ours = RunEdgeopt(model, inputs, io);
  if (!ours.ok()) {
    report.error = "edgeopt: " + ours.status().ToString();
    return report;
  }
  Expected<std::vector<TensorValue>> ref = Unsupported("no oracle tried");
  std::string oracle;
  if (opts.oracle != Oracle::kLiteRtJs) {
    if (!Tflite29Available()) {
      report.error = TfliteOracle::MissingReason();
      return report;
    }
    ref = RunTflite29(bytes, inputs);
    oracle = "tflite-2.9";
  }
  if (opts.oracle == Oracle::kLiteRtJs || (opts.oracle == Oracle::kAuto && !ref.ok())) {
    std::string path = path_or_empty;
    std::string tmpdir;
    if (path.empty()) {
      static int counter = 0;
      tmpdir = MakeTempDir("cmp_model_" + std::to_string(counter++));
      path = tmpdir + "/model.tflite";
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                  static_cast<std::streamsize>(bytes.size()));
    }
    const std::string first_error = ref.ok() ? "" : ref.status().message();
    ref = RunLiteRtJs(path, inputs);
    oracle = first_error.empty() ? "litert.js" : "litert.js (tflite-2.9 failed: " + first_error.substr(0, 200) + ")";
    if (!tmpdir.empty()) fs::remove_all(tmpdir);
  }
  report.oracle = oracle;
  if (!ref.ok()) {
    report.error = "reference: " + ref.status().ToString();
    return report;
  }
  CompareReport cmp = CompareOutputs(*ours, *ref, opts);
  cmp.oracle = oracle;
  return cmp;
}

}  // namespace

static CompareReport CompareGraphImpl(const Graph& g, const CompareOptions& opts, std::vector<TensorValue> inputs);

namespace {
// How many generated graphs this test binary compared with a reference runtime, and how many
// agreed: printed when the binary ends (the closing notes quote these counts).
std::atomic<int64_t> g_graphs_compared{0}, g_graphs_agreed{0};

class CompareCountPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_graphs_compared > 0)
      std::printf("[conformance] %lld generated graphs compared with a reference runtime, %lld agreed\n",
                  static_cast<long long>(g_graphs_compared.load()), static_cast<long long>(g_graphs_agreed.load()));
  }
};
[[maybe_unused]] ::testing::Environment* const g_count_printer =
    ::testing::AddGlobalTestEnvironment(new CompareCountPrinter);
}  // namespace

CompareReport CompareGraph(const Graph& g, const CompareOptions& opts, std::vector<TensorValue> inputs) {
  CompareReport report = CompareGraphImpl(g, opts, std::move(inputs));
  ++g_graphs_compared;
  if (report.ok) ++g_graphs_agreed;
  return report;
}

static CompareReport CompareGraphImpl(const Graph& g, const CompareOptions& opts, std::vector<TensorValue> inputs) {
  CompareReport report;
  auto bytes = SerializeModel(g);
  if (!bytes.ok()) {
    report.error = "serialize: " + bytes.status().ToString();
    return report;
  }
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) {
    report.error = model.status().ToString();
    return report;
  }
  if (inputs.empty()) inputs = RandomInputs(g, opts);
  return CompareImpl(*bytes, "", *model, opts, inputs);
}

CompareReport CompareModelFile(const std::string& path, const CompareOptions& opts, std::vector<TensorValue> inputs) {
  CompareReport report;
  auto model = rt::Model::FromFile(path);
  if (!model.ok()) {
    report.error = model.status().ToString();
    return report;
  }
  if (inputs.empty()) inputs = RandomInputs((*model)->graph(), opts);
  return CompareImpl(ReadFileBytes(path), path, *model, opts, inputs);
}

}  // namespace edgeopt::testing
