#include "optimize/quantize/equalize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "graph/passes.h"
#include "optimize/quantize/calibrate.h"
#include "optimize/quantize/weights.h"

namespace edgeopt::optimize {
namespace {

using Op = tflite::BuiltinOperator;

// RELU6 channels are scaled only while their calibrated maximum, after scaling, stays below
// this fraction of 6: held-out inputs go beyond what a few calibration samples saw (with 0.8,
// MobileNet v1 0.25 calibrated on 4 photos was no longer exact on others: 37 dB; with 0.5, 62 dB).
constexpr float kRelu6Headroom = 0.5f;
constexpr float kMaxScale = 64.0f;

bool IsFloatConstant(const Graph& g, const Tensor& t) { return t.type == DType::kFloat32 && g.IsConstant(t); }

bool IsGraphOutput(const Subgraph& sg, int32_t t) { return std::find(sg.outputs.begin(), sg.outputs.end(), t) != sg.outputs.end(); }

// A float constant read only by op `op` (so rewriting it changes nothing else).
bool OwnedFloatConstant(const Graph& g, const Subgraph& sg, int32_t t, int op) {
  if (t < 0 || !IsFloatConstant(g, sg.tensors[t]) || IsGraphOutput(sg, t)) return false;
  const auto users = sg.FindConsumers(t);
  return users.size() == 1 && users[0] == op;
}

void SetFloatValues(Graph& g, Tensor& t, const std::vector<float>& v) {
  t.buffer = g.AddBuffer(Buffer::FromValues<float>(std::span<const float>(v)));
}

// Weights holding few distinct values (clustered by `edgeopt cluster`, or otherwise shared):
// dividing their input channels by different scales would multiply the distinct values and undo
// what makes such a model compress, so their pairs are left alone.
bool LooksClustered(const std::vector<float>& w) {
  if (w.size() < 1024) return false;
  std::unordered_set<float> distinct;
  for (float x : w) {
    distinct.insert(x);
    if (distinct.size() > 256) return false;
  }
  return true;
}

struct Pair {
  int producer = -1;
  int consumer = -1;
  int32_t tensor = -1;  // the producer's output
  int channels = 0;
  tflite::ActivationFunctionType act = tflite::ActivationFunctionType_NONE;
};

std::vector<Pair> FindPairs(const Graph& g) {
  const Subgraph& sg = g.main();
  std::vector<Pair> pairs;
  for (size_t p = 0; p < sg.ops.size(); ++p) {
    const Operator& prod = sg.ops[p];
    if (prod.code != Op::BuiltinOperator_CONV_2D && prod.code != Op::BuiltinOperator_DEPTHWISE_CONV_2D) continue;
    // RELU6 producers only. Their outputs share one range [0, 6] whatever each channel uses, which
    // is what starves small channels (MobileNet v1 0.25: top-1 agreement 15 -> 16 of 20 held-out
    // photos with equalization, MobileNetV2 12 -> 13 of 16). On RELU models equalizing (exact in
    // float too) lost int8 accuracy: vww_96 SNR 33 -> 20 dB, cifar10_resnet8 top-1 16 -> 14 of 16.
    const auto* act = FusedActivation(prod);
    if (!act || *act != tflite::ActivationFunctionType_RELU6) continue;
    if (prod.inputs.size() < 2 || prod.outputs.size() != 1) continue;
    const int pi = static_cast<int>(p);
    if (!OwnedFloatConstant(g, sg, prod.inputs[1], pi)) continue;
    const Tensor& w = sg.tensors[prod.inputs[1]];
    if (w.shape.size() != 4) continue;
    const int channels = prod.code == Op::BuiltinOperator_CONV_2D ? w.shape[0] : w.shape[3];
    if (prod.inputs.size() > 2 && prod.inputs[2] >= 0) {
      if (!OwnedFloatConstant(g, sg, prod.inputs[2], pi) || sg.tensors[prod.inputs[2]].num_elements() != channels) continue;
    }
    const int32_t t = prod.outputs[0];
    const Tensor& out = sg.tensors[t];
    if (out.type != DType::kFloat32 || out.shape.empty() || out.shape.back() != channels) continue;
    // The consumer reads the producer's output directly. (Following an AVERAGE_POOL_2D to it was
    // exact too, but balanced the pre-pool ranges, not the pooled ones the consumer sees: on
    // vww_96, whose FULLY_CONNECTED weights are per-tensor, int8 SNR fell from 28 to 15 dB.)
    const int32_t cur = t;
    if (IsGraphOutput(sg, cur)) continue;
    const auto users = sg.FindConsumers(cur);
    if (users.size() != 1) continue;
    const int consumer = users[0];
    if (sg.ops[consumer].inputs.empty() || sg.ops[consumer].inputs[0] != cur) continue;
    const Operator& cons = sg.ops[consumer];
    if (cons.inputs.size() < 2 || !OwnedFloatConstant(g, sg, cons.inputs[1], consumer)) continue;
    const Tensor& w2 = sg.tensors[cons.inputs[1]];
    if (cons.code == Op::BuiltinOperator_CONV_2D) {
      if (w2.shape.size() != 4 || w2.shape[3] != channels) continue;  // (grouped convolutions excluded)
    } else if (cons.code == Op::BuiltinOperator_FULLY_CONNECTED) {
      if (w2.shape.size() != 2 || w2.shape[1] % channels != 0 || sg.tensors[cur].num_elements() % w2.shape[1] != 0) continue;
    } else {
      continue;
    }
    pairs.push_back({pi, consumer, t, channels, *act});
  }
  return pairs;
}

}  // namespace

Expected<int> EqualizeCrossLayer(Graph& g, const QuantizeOptions& o) {
  if (o.calibration.empty()) return InvalidArgument("cross-layer equalization needs calibration samples");
  std::vector<Pair> pairs = FindPairs(g);
  if (pairs.empty()) return 0;
  // Per-channel activation ranges of every pair's producer output.
  std::vector<std::vector<float>> mn(pairs.size()), mx(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    mn[k].assign(pairs[k].channels, std::numeric_limits<float>::max());
    mx[k].assign(pairs[k].channels, std::numeric_limits<float>::lowest());
  }
  ASSIGN_OR_RETURN(auto interp, MakeCalibrationInterpreter(g, o));
  for (size_t s = 0; s < o.calibration.size(); ++s) {
    RETURN_IF_ERROR(FeedCalibrationSample(*interp, o, s));
    for (size_t k = 0; k < pairs.size(); ++k) {
      const rt::RtTensor* rt = interp->main().tensor(pairs[k].tensor);
      if (!rt->data) continue;
      const float* v = rt->data_as<float>();
      const int64_t n = rt->num_elements();
      const int c = pairs[k].channels;
      for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(v[i])) continue;
        const size_t ch = static_cast<size_t>(i % c);
        mn[k][ch] = std::min(mn[k][ch], v[i]);
        mx[k][ch] = std::max(mx[k][ch], v[i]);
      }
    }
  }
  Subgraph& sg = g.main();
  int changed = 0;
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    const int C = p.channels;
    Operator& prod = sg.ops[p.producer];
    Operator& cons = sg.ops[p.consumer];
    std::vector<float> w2 = ConstantAsFloat(g, sg.tensors[cons.inputs[1]]);
    if (LooksClustered(w2)) continue;
    // Which producer channel each consumer weight multiplies: CONV_2D [O,KH,KW,C] and
    // FULLY_CONNECTED [O, features] (NHWC-flattened: feature % C).
    const int last2 = sg.tensors[cons.inputs[1]].shape.back();
    auto channel_of = [&](size_t i) { return (i % last2) % C; };
    std::vector<float> r2(C, 0.0f);
    for (size_t i = 0; i < w2.size(); ++i) r2[channel_of(i)] = std::max(r2[channel_of(i)], std::fabs(w2[i]));
    const bool relu6 = p.act == tflite::ActivationFunctionType_RELU6;
    std::vector<float> a(C, 0.0f);
    std::vector<char> free(C, 0);
    float amax = 0, balanced_max = 0;
    for (int c = 0; c < C; ++c) {
      if (mx[k][c] < mn[k][c]) continue;  // never computed
      a[c] = std::max(std::fabs(mn[k][c]), std::fabs(mx[k][c]));
      amax = std::max(amax, a[c]);
      free[c] = a[c] > 0 && r2[c] > 0 && (!relu6 || mx[k][c] <= 6.0f * kRelu6Headroom);
      if (free[c]) balanced_max = std::max(balanced_max, std::sqrt(a[c] * r2[c]));
    }
    if (balanced_max <= 0 || amax <= 0) continue;
    const float cap = relu6 ? std::min(amax, 6.0f * kRelu6Headroom) : amax;
    std::vector<float> s(C, 1.0f);
    bool any = false;
    for (int c = 0; c < C; ++c) {
      if (!free[c]) continue;
      float sc = cap / balanced_max * std::sqrt(r2[c] / a[c]);
      sc = std::clamp(sc, 1.0f / kMaxScale, kMaxScale);
      if (relu6) sc = std::min(sc, 6.0f * kRelu6Headroom / mx[k][c]);
      if (!std::isfinite(sc) || sc <= 0) sc = 1.0f;
      s[c] = sc;
      any |= std::fabs(sc - 1.0f) > 1e-3f;
    }
    if (!any) continue;
    // Producer: output channel c (weights and bias) times s_c.
    Tensor& w = sg.tensors[prod.inputs[1]];
    std::vector<float> wv = ConstantAsFloat(g, w);
    const bool depthwise = prod.code == Op::BuiltinOperator_DEPTHWISE_CONV_2D;
    const size_t per_out = wv.size() / static_cast<size_t>(C);
    for (size_t i = 0; i < wv.size(); ++i) wv[i] *= s[depthwise ? i % C : i / per_out];
    SetFloatValues(g, w, wv);
    if (prod.inputs.size() > 2 && prod.inputs[2] >= 0) {
      Tensor& b = sg.tensors[prod.inputs[2]];
      std::vector<float> bv = ConstantAsFloat(g, b);
      for (int c = 0; c < C; ++c) bv[c] *= s[c];
      SetFloatValues(g, b, bv);
    }
    // Consumer: input channel c divided by s_c.
    for (size_t i = 0; i < w2.size(); ++i) w2[i] /= s[channel_of(i)];
    SetFloatValues(g, sg.tensors[cons.inputs[1]], w2);
    ++changed;
  }
  return changed;
}

namespace {

struct BiasJob {
  int op = -1;                // index in the float graph
  std::string output;         // its output tensor's name (to find the op in a quantized trial)
  std::vector<double> sum_f;  // float model: input summed per (kernel tap, input channel) / per feature
  double count_f = 0;
  std::vector<float> bias;    // the bias before correction
};

// Adds, for op `op` of the running interpreter, the input each kernel tap reads summed over the
// output positions (zero padding excluded); FULLY_CONNECTED: each feature summed over rows.
// Integer inputs are dequantized.
void AccumulateTaps(const Graph& g, const Subgraph& sg, const Operator& op, rt::Interpreter& interp, std::vector<double>& sum,
                    double& count) {
  const rt::RtTensor* x = interp.main().tensor(op.inputs[0]);
  const rt::RtTensor* y = interp.main().tensor(op.outputs[0]);
  if (!x->data || !y->data) return;
  std::vector<float> real(static_cast<size_t>(x->num_elements()));
  if (x->type == DType::kFloat32) {
    std::memcpy(real.data(), x->data, real.size() * 4);
  } else if ((x->type == DType::kInt8 || x->type == DType::kInt16) && x->quant && x->quant->has_scale()) {
    const float scale = x->quant->sc();
    const int64_t zp = x->quant->zp();
    for (size_t i = 0; i < real.size(); ++i) {
      const int64_t v = x->type == DType::kInt8 ? x->data_as<int8_t>()[i] : x->data_as<int16_t>()[i];
      real[i] = static_cast<float>(v - zp) * scale;
    }
  } else {
    return;
  }
  const float* xv = real.data();
  if (op.code == Op::BuiltinOperator_FULLY_CONNECTED) {
    const int64_t in = static_cast<int64_t>(sum.size());
    const int64_t rows = x->num_elements() / in;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < in; ++j) sum[j] += xv[r * in + j];
    count += static_cast<double>(rows);
    return;
  }
  const Tensor& w = sg.tensors[op.inputs[1]];
  (void)g;
  const int KH = w.shape[1], KW = w.shape[2];
  int sh = 1, sw = 1, dh = 1, dw = 1;
  tflite::Padding padding = tflite::Padding_SAME;
  if (const auto* c = op.options.AsConv2DOptions()) {
    sh = c->stride_h, sw = c->stride_w, dh = c->dilation_h_factor, dw = c->dilation_w_factor, padding = c->padding;
  } else if (const auto* d = op.options.AsDepthwiseConv2DOptions()) {
    sh = d->stride_h, sw = d->stride_w, dh = d->dilation_h_factor, dw = d->dilation_w_factor, padding = d->padding;
  }
  const int B = x->dim(0), IH = x->dim(1), IW = x->dim(2), IC = x->dim(3);
  const int OH = y->dim(1), OW = y->dim(2);
  if (sum.size() != static_cast<size_t>(KH) * KW * IC) return;
  int pt = 0, pl = 0;
  if (padding == tflite::Padding_SAME) {
    pt = std::max(0, ((OH - 1) * sh + (KH - 1) * dh + 1 - IH) / 2);
    pl = std::max(0, ((OW - 1) * sw + (KW - 1) * dw + 1 - IW) / 2);
  }
  for (int b = 0; b < B; ++b)
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        double* acc = sum.data() + static_cast<size_t>(kh * KW + kw) * IC;
        for (int oy = 0; oy < OH; ++oy) {
          const int iy = oy * sh + kh * dh - pt;
          if (iy < 0 || iy >= IH) continue;
          for (int ox = 0; ox < OW; ++ox) {
            const int ix = ox * sw + kw * dw - pl;
            if (ix < 0 || ix >= IW) continue;
            const float* px = xv + ((static_cast<int64_t>(b) * IH + iy) * IW + ix) * IC;
            for (int c = 0; c < IC; ++c) acc[c] += px[c];
          }
        }
      }
  count += static_cast<double>(B) * OH * OW;
}

// Per output channel: sum(W_q * mean_q) - sum(W * mean_f), W_q the int8 weights (dequantized) the
// quantizer will write for the op's current float weights.
std::vector<double> MeanOutputError(const Graph& g, const QuantizeOptions& o, const Operator& op, const std::vector<double>& sum_f,
                                    double count_f, const std::vector<double>& sum_q, double count_q) {
  const Tensor& w = g.main().tensors[op.inputs[1]];
  const std::vector<float> wv = ConstantAsFloat(g, w);
  const bool depthwise = op.code == Op::BuiltinOperator_DEPTHWISE_CONV_2D;
  const bool fc = op.code == Op::BuiltinOperator_FULLY_CONNECTED;
  // The same quantization QuantizeFullInteger applies (FULLY_CONNECTED is per-tensor there).
  const QuantizedWeights q = QuantizeSymmetricInt8(wv, w.shape, !fc && o.per_channel, depthwise ? 3 : 0);
  const int O = depthwise ? w.shape[3] : w.shape[0];
  const size_t per_out = wv.size() / static_cast<size_t>(O);
  std::vector<double> err(O, 0.0);
  const int IC = depthwise ? static_cast<int>(sum_f.size() / (static_cast<size_t>(w.shape[1]) * w.shape[2])) : 0;
  const int mult = depthwise && IC > 0 ? O / IC : 1;
  for (size_t i = 0; i < wv.size(); ++i) {
    const size_t oc = depthwise ? i % O : i / per_out;
    const size_t m = depthwise ? (i / O) * IC + oc / mult : i % per_out;
    const double wq = static_cast<double>(q.values[i]) * q.scales[q.scales.size() == 1 ? 0 : oc];
    err[oc] += wq * (sum_q[m] / count_q) - static_cast<double>(wv[i]) * (sum_f[m] / count_f);
  }
  return err;
}

}  // namespace

Expected<int> CorrectBiasesForWeightQuantization(Graph& g, const QuantizeOptions& o, const std::vector<int>& ops) {
  if (o.calibration.empty()) return InvalidArgument("bias correction needs calibration samples");
  Subgraph& sg = g.main();
  std::vector<BiasJob> jobs;
  for (int i : ops) {
    const Operator& op = sg.ops[i];
    if (op.code != Op::BuiltinOperator_CONV_2D && op.code != Op::BuiltinOperator_DEPTHWISE_CONV_2D &&
        op.code != Op::BuiltinOperator_FULLY_CONNECTED)
      continue;
    if (op.inputs.size() < 3 || op.inputs[2] < 0 || !OwnedFloatConstant(g, sg, op.inputs[2], i)) continue;
    if (!IsFloatConstant(g, sg.tensors[op.inputs[1]]) || sg.tensors[op.inputs[0]].type != DType::kFloat32) continue;
    const Tensor& w = sg.tensors[op.inputs[1]];
    const Tensor& x = sg.tensors[op.inputs[0]];
    BiasJob job;
    job.op = i;
    job.output = sg.tensors[op.outputs[0]].name;
    job.bias = ConstantAsFloat(g, sg.tensors[op.inputs[2]]);
    const int O = op.code == Op::BuiltinOperator_DEPTHWISE_CONV_2D ? (w.shape.size() == 4 ? w.shape[3] : -1) : w.shape[0];
    if (static_cast<int>(job.bias.size()) != O) continue;
    if (op.code == Op::BuiltinOperator_FULLY_CONNECTED) {
      if (w.shape.size() != 2 || x.num_elements() % w.shape[1] != 0) continue;
      job.sum_f.assign(w.shape[1], 0.0);
    } else {
      if (w.shape.size() != 4 || x.shape.size() != 4) continue;
      if (op.code == Op::BuiltinOperator_CONV_2D && w.shape[3] != x.shape[3]) continue;  // grouped
      job.sum_f.assign(static_cast<size_t>(w.shape[1]) * w.shape[2] * x.shape[3], 0.0);
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return 0;
  {
    ASSIGN_OR_RETURN(auto interp, MakeCalibrationInterpreter(g, o));
    for (size_t s = 0; s < o.calibration.size(); ++s) {
      RETURN_IF_ERROR(FeedCalibrationSample(*interp, o, s));
      for (BiasJob& job : jobs) AccumulateTaps(g, sg, sg.ops[job.op], *interp, job.sum_f, job.count_f);
    }
  }
  auto set_bias = [&](BiasJob& job, const std::vector<double>& err) {
    std::vector<float> bv(job.bias.size());
    for (size_t c = 0; c < bv.size(); ++c) bv[c] = static_cast<float>(job.bias[c] - err[c]);
    SetFloatValues(g, sg.tensors[sg.ops[job.op].inputs[2]], bv);
  };
  int corrected = 0;
  for (BiasJob& job : jobs) {
    if (job.count_f <= 0) continue;
    set_bias(job, MeanOutputError(g, o, sg.ops[job.op], job.sum_f, job.count_f, job.sum_f, job.count_f));
    ++corrected;
  }
  return corrected;
}

}  // namespace edgeopt::optimize
