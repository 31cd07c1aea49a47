// UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM (full kernel) reference kernels, TFLite 2.9 semantics.
//
// Three variants, chosen from the tensor types at creation:
//   float   all float32 (peephole, projection, layer norm, CIFG, clipping)
//   hybrid  float32 activations, int8 weights: activations are quantized per row at run time
//           (symmetric, or asymmetric with `asymmetric_quantize_inputs`), int32 dot products,
//           float gate math
//   int8    full integer 8x8->16 (TFLite's EvalInteger8x8_16): int8 input/output/output state,
//           int16 cell state (power-of-two scale), int32 biases, int16 peephole and layer-norm
//           weights; gate pre-activations are int16 at the scales of intermediates 0..3
//           (2^-12 without layer norm) and the hidden state at intermediate 4's scale.
// The output state (input 18) and cell state (input 19) are variable tensors updated in place,
// so state carries over from one invoke to the next.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/lstm/lstm_math.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

// Input positions (TFLite's lstm::full).
enum : int {
  kInput = 0,
  kInputToInputW = 1,  // + gate: input, forget, cell, output
  kRecurrentToInputW = 5,
  kCellToInputW = 9,  // peephole: input, forget, output
  kCellToForgetW = 10,
  kCellToOutputW = 11,
  kInputGateBias = 12,  // + gate
  kProjectionW = 16,
  kProjectionBias = 17,
  kOutputState = 18,
  kCellState = 19,
  kInputLayerNorm = 20,  // + gate
};
constexpr int kInputGate = 0, kForgetGate = 1, kCellGate = 2, kOutputGate = 3;
// Gate activation code for sigmoid (TfLiteFusedActivation's kTfLiteActSigmoid; not a schema value).
constexpr int kSigmoid = 6;
constexpr const char* kGateNames[4] = {"input", "forget", "cell", "output"};

enum class Mode { kFloat, kHybrid, kInt8 };

struct Options {
  int activation = tflite::ActivationFunctionType_TANH;
  float cell_clip = 0, proj_clip = 0;
  bool time_major = true;
  bool asymmetric_quantize_inputs = false;
};

// Integer parameters (TFLite's IntegerLstmParameter), computed at prepare.
struct IntParams {
  int32_t x_scale_a[4] = {}, h_scale_a[4] = {}, c_scale_a[4] = {}, ln_scale_a[4] = {};
  int x_scale_b[4] = {}, h_scale_b[4] = {}, c_scale_b[4] = {}, ln_scale_b[4] = {};
  int32_t variance_guard[4] = {};
  int32_t proj_scale_a = 0, hidden_scale_a = 0;
  int proj_scale_b = 0, hidden_scale_b = 0;
  int32_t hidden_zp = 0, output_state_zp = 0;
  int cell_scale = 0;  // cell state scale is 2^cell_scale
  int16_t cell_clip = 0;
  int8_t proj_clip = 0;
  // bias + zero-point corrections folded per gate: input side and recurrent side.
  std::vector<int32_t> x_bias[4], h_bias[4], proj_bias;
};

class LstmKernel : public rt::OpKernel {
 public:
  LstmKernel(Mode mode, bool sequence, Options options)
      : mode_(mode), sequence_(sequence), opt_(options) {}

  std::string variant() const override {
    const char* op = sequence_ ? "unidirectional_sequence_lstm" : "lstm";
    const char* dt = mode_ == Mode::kFloat ? "f32" : mode_ == Mode::kHybrid ? "hybrid" : "int8";
    return std::string(op) + "/" + dt + "/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override {
    const int64_t steps = static_cast<int64_t>(max_time_) * n_batch_;
    const int gates = cifg_ ? 3 : 4;
    return steps * (gates * static_cast<int64_t>(n_cell_) * (n_input_ + n_output_) +
                    (has_projection_ ? static_cast<int64_t>(n_cell_) * n_output_ : 0));
  }

  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;

 private:
  Status CheckShapesAndTypes(rt::KernelContext& ctx);
  Status PrepareInteger(rt::KernelContext& ctx);
  void ComputeIntegerBiases(rt::KernelContext& ctx);
  void ComputeRowSums(rt::KernelContext& ctx);

  void StepFloat(rt::KernelContext& ctx, const float* x, int nb, float* h, float* c, float* out);
  void StepHybrid(rt::KernelContext& ctx, const float* x, int nb, float* h, float* c, float* out);
  void StepInt8(rt::KernelContext& ctx, const int8_t* x, int nb, int8_t* h, int16_t* c, int8_t* out);

  template <typename T>
  const T* In(const rt::KernelContext& ctx, int i) const {
    const rt::RtTensor* t = ctx.input(i);
    return t ? t->data_as<T>() : nullptr;
  }

  Mode mode_;
  bool sequence_;
  Options opt_;
  bool cifg_ = false, peephole_ = false, layer_norm_ = false, has_projection_ = false;
  int max_time_ = 0, n_batch_ = 0, n_input_ = 0, n_cell_ = 0, n_output_ = 0;
  int scratch_id_ = -1;
  size_t scratch_bytes_ = 0;
  IntParams ip_;
  bool int_biases_ready_ = false;
  // Hybrid asymmetric: row sums of each weight matrix (input side, recurrent side, projection).
  std::vector<int32_t> x_row_sums_[4], h_row_sums_[4], proj_row_sums_;
  bool row_sums_ready_ = false;
};

// ---------------------------------------------------------------------------------------------
// Prepare

Status LstmKernel::CheckShapesAndTypes(rt::KernelContext& ctx) {
  const int n = ctx.num_inputs();
  if (n != 20 && n != 24) return ctx.Error("expects 20 or 24 inputs, has " + std::to_string(n));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  auto need = [&](int i, const char* what) -> Status {
    if (!ctx.input(i)) return ctx.Error(std::string(what) + " (input " + std::to_string(i) + ") is missing");
    return Status::Ok();
  };
  RETURN_IF_ERROR(need(kInput, "input"));
  for (int g = kForgetGate; g <= kOutputGate; ++g) {
    RETURN_IF_ERROR(need(kInputToInputW + g, "input-to-gate weights"));
    RETURN_IF_ERROR(need(kRecurrentToInputW + g, "recurrent-to-gate weights"));
    RETURN_IF_ERROR(need(kInputGateBias + g, "gate bias"));
  }
  RETURN_IF_ERROR(need(kOutputState, "output state"));
  RETURN_IF_ERROR(need(kCellState, "cell state"));

  const rt::RtTensor* input = ctx.input(kInput);
  const int want_rank = sequence_ ? 3 : 2;
  if (input->rank() != want_rank)
    return ctx.Error("input must have rank " + std::to_string(want_rank) + ", is " + Describe(*input));
  if (sequence_) {
    max_time_ = opt_.time_major ? input->dim(0) : input->dim(1);
    n_batch_ = opt_.time_major ? input->dim(1) : input->dim(0);
    n_input_ = input->dim(2);
  } else {
    max_time_ = 1;
    n_batch_ = input->dim(0);
    n_input_ = input->dim(1);
  }
  const rt::RtTensor* w_out = ctx.input(kInputToInputW + kOutputGate);
  const rt::RtTensor* r_out = ctx.input(kRecurrentToInputW + kOutputGate);
  if (w_out->rank() != 2 || r_out->rank() != 2)
    return ctx.Error("weights must be 2-D, input-to-output is " + Describe(*w_out) + ", recurrent-to-output " +
                     Describe(*r_out));
  n_cell_ = w_out->dim(0);
  n_output_ = r_out->dim(1);

  cifg_ = ctx.input(kInputToInputW) == nullptr;
  if ((ctx.input(kRecurrentToInputW) == nullptr) != cifg_)
    return ctx.Error("input-to-input and recurrent-to-input weights must both be present or both absent (CIFG)");
  peephole_ = ctx.input(kCellToOutputW) != nullptr;
  const bool peep_ok = ((ctx.input(kCellToInputW) || cifg_) && ctx.input(kCellToForgetW) && ctx.input(kCellToOutputW)) ||
                       (!ctx.input(kCellToInputW) && !ctx.input(kCellToForgetW) && !ctx.input(kCellToOutputW));
  if (!peep_ok) return ctx.Error("peephole weights must be all present or all absent");
  if (cifg_ && ctx.input(kInputGateBias)) return ctx.Error("CIFG LSTM must not have an input gate bias");
  if (!cifg_ && !ctx.input(kInputGateBias)) return ctx.Error("input gate bias (input 12) is missing");
  has_projection_ = ctx.input(kProjectionW) != nullptr;
  if (!has_projection_ && ctx.input(kProjectionBias)) return ctx.Error("projection bias without projection weights");
  if (!has_projection_ && n_output_ != n_cell_)
    return ctx.Error("without projection n_output (" + std::to_string(n_output_) + ") must equal n_cell (" +
                     std::to_string(n_cell_) + ")");
  layer_norm_ = n == 24 && ctx.input(kInputLayerNorm + kForgetGate) != nullptr;
  if (layer_norm_) {
    if (cifg_ != (ctx.input(kInputLayerNorm) == nullptr))
      return ctx.Error("input layer-norm coefficients must be present exactly when the input gate is");
    for (int g = kForgetGate; g <= kOutputGate; ++g)
      if (!ctx.input(kInputLayerNorm + g)) return ctx.Error(std::string(kGateNames[g]) + " layer-norm coefficients missing");
  }

  auto check_shape = [&](int i, std::vector<int32_t> shape, const char* what) -> Status {
    const rt::RtTensor* t = ctx.input(i);
    if (t && t->shape != shape)
      return ctx.Error(std::string(what) + " (input " + std::to_string(i) + ") must be " + rt::ShapeToString(shape) +
                       ", is " + Describe(*t));
    return Status::Ok();
  };
  for (int g = 0; g < 4; ++g) {
    RETURN_IF_ERROR(check_shape(kInputToInputW + g, {n_cell_, n_input_}, "input-to-gate weights"));
    RETURN_IF_ERROR(check_shape(kRecurrentToInputW + g, {n_cell_, n_output_}, "recurrent-to-gate weights"));
    RETURN_IF_ERROR(check_shape(kInputGateBias + g, {n_cell_}, "gate bias"));
    if (layer_norm_) RETURN_IF_ERROR(check_shape(kInputLayerNorm + g, {n_cell_}, "layer-norm coefficients"));
  }
  for (int i = kCellToInputW; i <= kCellToOutputW; ++i) RETURN_IF_ERROR(check_shape(i, {n_cell_}, "peephole weights"));
  RETURN_IF_ERROR(check_shape(kProjectionW, {n_output_, n_cell_}, "projection weights"));
  RETURN_IF_ERROR(check_shape(kProjectionBias, {n_output_}, "projection bias"));

  const rt::RtTensor* hs = ctx.input(kOutputState);
  const rt::RtTensor* cs = ctx.input(kCellState);
  for (const rt::RtTensor* s : {hs, cs})
    if (!s->def || !s->def->is_variable)
      return ctx.Error("state tensor " + Describe(*s) + " must be a variable tensor");
  if (hs->num_elements() != static_cast<int64_t>(n_batch_) * n_output_)
    return ctx.Error("output state " + Describe(*hs) + " must hold n_batch*n_output = " +
                     std::to_string(static_cast<int64_t>(n_batch_) * n_output_) + " values");
  if (cs->num_elements() != static_cast<int64_t>(n_batch_) * n_cell_)
    return ctx.Error("cell state " + Describe(*cs) + " must hold n_batch*n_cell = " +
                     std::to_string(static_cast<int64_t>(n_batch_) * n_cell_) + " values");

  // Types.
  auto check_type = [&](int i, DType want, const char* what) -> Status {
    const rt::RtTensor* t = ctx.input(i);
    if (t && t->type != want)
      return ctx.Error(std::string(what) + " (input " + std::to_string(i) + ") must be " + TypeName(want) + ", is " +
                       Describe(*t));
    return Status::Ok();
  };
  const DType act = mode_ == Mode::kInt8 ? DType::kInt8 : DType::kFloat32;
  const DType weight = mode_ == Mode::kFloat ? DType::kFloat32 : DType::kInt8;
  const DType bias = mode_ == Mode::kInt8 ? DType::kInt32 : DType::kFloat32;
  const DType peep = mode_ == Mode::kInt8 ? DType::kInt16 : weight;
  const DType ln = mode_ == Mode::kInt8 ? DType::kInt16 : DType::kFloat32;
  RETURN_IF_ERROR(check_type(kInput, act, "input"));
  for (int g = 0; g < 4; ++g) {
    RETURN_IF_ERROR(check_type(kInputToInputW + g, weight, "input-to-gate weights"));
    RETURN_IF_ERROR(check_type(kRecurrentToInputW + g, weight, "recurrent-to-gate weights"));
    RETURN_IF_ERROR(check_type(kInputGateBias + g, bias, "gate bias"));
    if (layer_norm_) RETURN_IF_ERROR(check_type(kInputLayerNorm + g, ln, "layer-norm coefficients"));
  }
  for (int i = kCellToInputW; i <= kCellToOutputW; ++i) RETURN_IF_ERROR(check_type(i, peep, "peephole weights"));
  RETURN_IF_ERROR(check_type(kProjectionW, weight, "projection weights"));
  RETURN_IF_ERROR(check_type(kProjectionBias, bias, "projection bias"));
  RETURN_IF_ERROR(check_type(kOutputState, act, "output state"));
  RETURN_IF_ERROR(check_type(kCellState, mode_ == Mode::kInt8 ? DType::kInt16 : DType::kFloat32, "cell state"));
  if (ctx.output(0)->type != act) return ctx.Error("output must be " + TypeName(act) + ", is " + Describe(*ctx.output(0)));
  if (opt_.cell_clip < 0 || opt_.proj_clip < 0) return ctx.Error("cell_clip and proj_clip must be >= 0");
  return Status::Ok();
}

Status LstmKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckShapesAndTypes(ctx));
  rt::Shape out_shape = ctx.input(kInput)->shape;
  out_shape.back() = n_output_;
  RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(out_shape)));

  const size_t rows = static_cast<size_t>(n_batch_);
  const size_t nc = static_cast<size_t>(n_cell_);
  const size_t widest = static_cast<size_t>(std::max({n_input_, n_output_, n_cell_}));
  switch (mode_) {
    case Mode::kFloat:
      // 4 gates + hidden scratch.
      scratch_bytes_ = 5 * rows * nc * sizeof(float);
      break;
    case Mode::kHybrid:
      // 4 gates + hidden, peephole weights (n_cell), quantized rows (input, state, hidden) and
      // per-row scale/zero point for each.
      scratch_bytes_ = 5 * rows * nc * sizeof(float) + nc * sizeof(float) + 3 * rows * widest +
                       3 * rows * (sizeof(float) + sizeof(int32_t)) + 64;
      if (opt_.asymmetric_quantize_inputs) ComputeRowSums(ctx);
      break;
    case Mode::kInt8:
      // 4 int16 gates, int16 tanh(cell), int8 hidden.
      scratch_bytes_ = 5 * rows * nc * sizeof(int16_t) + rows * nc + 64;
      RETURN_IF_ERROR(PrepareInteger(ctx));
      break;
  }
  scratch_id_ = ctx.RequestScratch(scratch_bytes_);
  return Status::Ok();
}

void LstmKernel::ComputeRowSums(rt::KernelContext& ctx) {
  row_sums_ready_ = true;
  auto sums = [&](int i, int rows, int cols, std::vector<int32_t>& out) {
    out.assign(rows, 0);
    const int8_t* w = In<int8_t>(ctx, i);
    if (!w) {
      row_sums_ready_ = row_sums_ready_ && ctx.input(i) == nullptr;
      return;
    }
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) out[r] += w[r * cols + c];
  };
  for (int g = 0; g < 4; ++g) {
    sums(kInputToInputW + g, n_cell_, n_input_, x_row_sums_[g]);
    sums(kRecurrentToInputW + g, n_cell_, n_output_, h_row_sums_[g]);
  }
  sums(kProjectionW, n_output_, n_cell_, proj_row_sums_);
}

// log2 of a power-of-two scale, as TFLite's CheckedLog2.
bool CheckedLog2(float x, int* log2_result) {
  const float x_log2 = std::log(x) * (1.0f / std::log(2.0f));
  const float rounded = std::round(x_log2);
  *log2_result = static_cast<int>(rounded);
  return std::abs(x_log2 - rounded) < 1e-3f;
}

Status LstmKernel::PrepareInteger(rt::KernelContext& ctx) {
  const int num_intermediates = static_cast<int>(ctx.op().intermediates.size());
  if (num_intermediates != 5)
    return ctx.UnsupportedError("integer LSTM needs 5 intermediate tensors (gate and hidden scales), has " +
                                std::to_string(num_intermediates));
  const rt::RtTensor* cell_state = ctx.input(kCellState);
  const rt::RtTensor* output_state = ctx.input(kOutputState);
  const rt::RtTensor* output = ctx.output(0);
  const rt::RtTensor* input = ctx.input(kInput);
  for (const rt::RtTensor* t : {cell_state, output_state, output, input})
    if (t->scale() <= 0) return ctx.Error("integer LSTM tensor " + Describe(*t) + " has no quantization scale");

  float inter_scale[5];
  int32_t inter_zp[5];
  for (int i = 0; i < 4; ++i) {
    if (layer_norm_) {
      const rt::RtTensor* t = ctx.intermediate(i);
      if (!t || t->scale() <= 0) return ctx.Error("layer-norm LSTM intermediate " + std::to_string(i) + " has no scale");
      inter_scale[i] = t->scale();
      inter_zp[i] = t->zero_point();
    } else {
      inter_scale[i] = static_cast<float>(std::pow(2, -12));  // Q3.12 gate pre-activations
      inter_zp[i] = 0;
    }
  }
  const rt::RtTensor* hidden = ctx.intermediate(4);
  if (!hidden || hidden->scale() <= 0) return ctx.Error("intermediate 4 (hidden state) has no quantization scale");
  inter_scale[4] = hidden->scale();
  inter_zp[4] = hidden->zero_point();
  (void)inter_zp;

  IntParams& p = ip_;
  p.cell_clip = opt_.cell_clip > 0.0f
                    ? static_cast<int16_t>(std::min(std::max(opt_.cell_clip / cell_state->scale(), -32768.0f), 32767.0f))
                    : 0;
  p.proj_clip = opt_.proj_clip > 0.0f
                    ? static_cast<int8_t>(std::min(std::max(opt_.proj_clip / output->scale(), -128.0f), 127.0f))
                    : 0;
  if (!CheckedLog2(cell_state->scale(), &p.cell_scale))
    return ctx.Error("cell state scale " + std::to_string(cell_state->scale()) + " must be a power of two");
  if (15 + p.cell_scale < 0 || 15 + p.cell_scale > 6)
    return ctx.UnsupportedError("cell state scale 2^" + std::to_string(p.cell_scale) +
                                " is outside the supported 2^-15..2^-9");

  const float input_scale = input->scale();
  const float output_state_scale = output_state->scale();
  auto scale_of = [&](int i) { return ctx.input(i) ? ctx.input(i)->scale() : 1.0f; };
  for (int g = 0; g < 4; ++g) {
    if (g == kInputGate && cifg_) continue;
    // Products in float as TFLite computes them, then decomposed in double.
    const float x_eff = scale_of(kInputToInputW + g) * input_scale / inter_scale[g];
    const float h_eff = scale_of(kRecurrentToInputW + g) * output_state_scale / inter_scale[g];
    QuantizeMultiplier(x_eff, &p.x_scale_a[g], &p.x_scale_b[g]);
    QuantizeMultiplier(h_eff, &p.h_scale_a[g], &p.h_scale_b[g]);
    if (peephole_ && g != kCellGate) {
      const int peep_input = g == kInputGate ? kCellToInputW : g == kForgetGate ? kCellToForgetW : kCellToOutputW;
      const float c_eff = static_cast<float>(std::pow(2, p.cell_scale) * scale_of(peep_input) / inter_scale[g]);
      QuantizeMultiplier(c_eff, &p.c_scale_a[g], &p.c_scale_b[g]);
    }
    const float ln_scale = layer_norm_ ? scale_of(kInputLayerNorm + g) : 1.0f;
    QuantizeMultiplier(ln_scale, &p.ln_scale_a[g], &p.ln_scale_b[g]);
    p.variance_guard[g] = std::max(1, static_cast<int32_t>(10000 * ln_scale));
  }
  const float hidden_eff = static_cast<float>(std::pow(2, -15) / inter_scale[4] * std::pow(2, -15));
  QuantizeMultiplier(hidden_eff, &p.hidden_scale_a, &p.hidden_scale_b);
  if (has_projection_) {
    const float proj_eff = scale_of(kProjectionW) * inter_scale[4] / output_state_scale;
    QuantizeMultiplier(proj_eff, &p.proj_scale_a, &p.proj_scale_b);
  }
  p.hidden_zp = inter_zp[4];
  p.output_state_zp = output_state->zero_point();
  ComputeIntegerBiases(ctx);
  return Status::Ok();
}

// Effective biases: bias + zero_point * row_sum(weights). With layer norm the gate bias is added
// after normalization, not here.
void LstmKernel::ComputeIntegerBiases(rt::KernelContext& ctx) {
  int_biases_ready_ = true;
  auto fold = [&](int w_index, int bias_index, int32_t zero_point, int rows, int cols, std::vector<int32_t>& out) {
    out.assign(rows, 0);
    const rt::RtTensor* w = ctx.input(w_index);
    if (!w) return;
    if (!w->data || (bias_index >= 0 && ctx.input(bias_index) && !ctx.input(bias_index)->data)) {
      int_biases_ready_ = false;  // weights computed at run time: fold at invoke
      return;
    }
    if (bias_index >= 0 && ctx.input(bias_index)) {
      const int32_t* b = ctx.input(bias_index)->data_as<int32_t>();
      std::copy(b, b + rows, out.begin());
    }
    if (zero_point != 0) {
      const int8_t* m = w->data_as<int8_t>();
      for (int r = 0; r < rows; ++r) {
        int32_t sum = 0;
        for (int c = 0; c < cols; ++c) sum += m[r * cols + c];
        out[r] += sum * zero_point;
      }
    }
  };
  const int32_t x_zp = -ctx.input(kInput)->zero_point();
  const int32_t h_zp = -ctx.input(kOutputState)->zero_point();
  for (int g = 0; g < 4; ++g) {
    fold(kInputToInputW + g, layer_norm_ ? -1 : kInputGateBias + g, x_zp, n_cell_, n_input_, ip_.x_bias[g]);
    fold(kRecurrentToInputW + g, -1, h_zp, n_cell_, n_output_, ip_.h_bias[g]);
  }
  // TFLite 2.9 folds the hidden zero point with a positive sign here and subtracts it when
  // quantizing the hidden state (see StepInt8); the two cancel.
  fold(kProjectionW, kProjectionBias, ip_.hidden_zp, n_output_, n_cell_, ip_.proj_bias);
}

// ---------------------------------------------------------------------------------------------
// Steps: nb batch rows at a time (all of them when time-major, one when batch-major).

void LstmKernel::StepFloat(rt::KernelContext& ctx, const float* x, int nb, float* h, float* c, float* out) {
  const int nc = n_cell_;
  float* gates = ctx.Scratch<float>(scratch_id_);
  float* gate[4] = {gates, gates + nb * nc, gates + 2 * nb * nc, gates + 3 * nb * nc};
  float* hidden = gates + 4 * nb * nc;
  const float* peep_w[4] = {In<float>(ctx, kCellToInputW), In<float>(ctx, kCellToForgetW), nullptr,
                            In<float>(ctx, kCellToOutputW)};
  auto compute_gate = [&](int g, int activation) {
    float* v = gate[g];
    const float* bias = In<float>(ctx, kInputGateBias + g);
    for (int b = 0; b < nb; ++b)
      for (int i = 0; i < nc; ++i) v[b * nc + i] = layer_norm_ ? 0.0f : bias[i];
    lstm::MatVecAccumulate(In<float>(ctx, kInputToInputW + g), nc, n_input_, x, nb, v);
    lstm::MatVecAccumulate(In<float>(ctx, kRecurrentToInputW + g), nc, n_output_, h, nb, v);
    if (peephole_ && peep_w[g])
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] += peep_w[g][i] * c[b * nc + i];
    if (layer_norm_) {
      const float* ln = In<float>(ctx, kInputLayerNorm + g);
      lstm::MeanStddevNormalization(v, nc, nb);
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] = v[b * nc + i] * ln[i] + bias[i];
    }
    if (activation == kSigmoid)
      for (int i = 0; i < nb * nc; ++i) v[i] = lstm::Sigmoid(v[i]);
    else
      lstm::ApplyActivation(v, nb * nc, activation);
  };
  if (!cifg_) compute_gate(kInputGate, kSigmoid);
  compute_gate(kForgetGate, kSigmoid);
  compute_gate(kCellGate, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) {
    const float in_gate = cifg_ ? 1.0f - gate[kForgetGate][i] : gate[kInputGate][i];
    c[i] = gate[kForgetGate][i] * c[i] + gate[kCellGate][i] * in_gate;
  }
  if (opt_.cell_clip > 0) lstm::ClipInPlace(c, nb * nc, opt_.cell_clip);
  compute_gate(kOutputGate, kSigmoid);
  std::copy(c, c + nb * nc, hidden);
  lstm::ApplyActivation(hidden, nb * nc, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) hidden[i] = gate[kOutputGate][i] * hidden[i];
  if (has_projection_) {
    const float* pb = In<float>(ctx, kProjectionBias);
    for (int b = 0; b < nb; ++b)
      for (int o = 0; o < n_output_; ++o) h[b * n_output_ + o] = pb ? pb[o] : 0.0f;
    lstm::MatVecAccumulate(In<float>(ctx, kProjectionW), n_output_, nc, hidden, nb, h);
    if (opt_.proj_clip > 0) lstm::ClipInPlace(h, nb * n_output_, opt_.proj_clip);
  } else {
    std::copy(hidden, hidden + nb * n_output_, h);
  }
  std::copy(h, h + nb * n_output_, out);
}

void LstmKernel::StepHybrid(rt::KernelContext& ctx, const float* x, int nb, float* h, float* c, float* out) {
  const int nc = n_cell_;
  const int widest = std::max({n_input_, n_output_, n_cell_});
  auto* base = ctx.Scratch<uint8_t>(scratch_id_);
  float* gates = reinterpret_cast<float*>(base);
  float* gate[4] = {gates, gates + nb * nc, gates + 2 * nb * nc, gates + 3 * nb * nc};
  float* hidden = gates + 4 * nb * nc;
  float* recovered = hidden + nb * nc;
  float* sf = recovered + nc;        // 3 * nb scaling factors: input, state, hidden
  int32_t* zps = reinterpret_cast<int32_t*>(sf + 3 * nb);
  int8_t* xq = reinterpret_cast<int8_t*>(zps + 3 * nb);
  int8_t* hq = xq + nb * widest;
  int8_t* hidden_q = hq + nb * widest;
  const bool asym = opt_.asymmetric_quantize_inputs;
  auto quantize_rows = [&](const float* v, int n, int8_t* q, float* s, int32_t* z) {
    for (int b = 0; b < nb; ++b) {
      if (asym) lstm::AsymmetricQuantize(v + b * n, n, q + b * n, &s[b], &z[b]);
      else lstm::SymmetricQuantize(v + b * n, n, q + b * n, &s[b]);
    }
  };
  const bool x_zero = lstm::IsZeroVector(x, nb * n_input_);
  const bool h_zero = lstm::IsZeroVector(h, nb * n_output_);
  if (!x_zero) quantize_rows(x, n_input_, xq, sf, zps);
  if (!h_zero) quantize_rows(h, n_output_, hq, sf + nb, zps + nb);
  const int peep_index[4] = {kCellToInputW, kCellToForgetW, -1, kCellToOutputW};
  auto compute_gate = [&](int g, int activation) {
    float* v = gate[g];
    const float* bias = In<float>(ctx, kInputGateBias + g);
    for (int b = 0; b < nb; ++b)
      for (int i = 0; i < nc; ++i) v[b * nc + i] = layer_norm_ ? 0.0f : bias[i];
    if (!x_zero) {
      const rt::RtTensor* w = ctx.input(kInputToInputW + g);
      lstm::HybridMatVecAccumulate(w->data_as<int8_t>(), nc, n_input_, xq, sf, asym ? zps : nullptr,
                                   x_row_sums_[g].data(), w->scale(), nb, v);
    }
    if (!h_zero) {
      const rt::RtTensor* w = ctx.input(kRecurrentToInputW + g);
      lstm::HybridMatVecAccumulate(w->data_as<int8_t>(), nc, n_output_, hq, sf + nb, asym ? zps + nb : nullptr,
                                   h_row_sums_[g].data(), w->scale(), nb, v);
    }
    if (peephole_ && peep_index[g] >= 0 && ctx.input(peep_index[g])) {
      const rt::RtTensor* w = ctx.input(peep_index[g]);
      const int8_t* wq = w->data_as<int8_t>();
      for (int i = 0; i < nc; ++i) recovered[i] = w->scale() * wq[i];
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] += recovered[i] * c[b * nc + i];
    }
    if (layer_norm_) {
      const float* ln = In<float>(ctx, kInputLayerNorm + g);
      lstm::MeanStddevNormalization(v, nc, nb);
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] = v[b * nc + i] * ln[i] + bias[i];
    }
    if (activation == kSigmoid)
      for (int i = 0; i < nb * nc; ++i) v[i] = lstm::Sigmoid(v[i]);
    else
      lstm::ApplyActivation(v, nb * nc, activation);
  };
  if (!cifg_) compute_gate(kInputGate, kSigmoid);
  compute_gate(kForgetGate, kSigmoid);
  compute_gate(kCellGate, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) {
    const float in_gate = cifg_ ? 1.0f - gate[kForgetGate][i] : gate[kInputGate][i];
    c[i] = gate[kForgetGate][i] * c[i] + gate[kCellGate][i] * in_gate;
  }
  if (opt_.cell_clip > 0) lstm::ClipInPlace(c, nb * nc, opt_.cell_clip);
  compute_gate(kOutputGate, kSigmoid);
  std::copy(c, c + nb * nc, hidden);
  lstm::ApplyActivation(hidden, nb * nc, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) hidden[i] = gate[kOutputGate][i] * hidden[i];
  if (has_projection_) {
    const float* pb = In<float>(ctx, kProjectionBias);
    for (int b = 0; b < nb; ++b)
      for (int o = 0; o < n_output_; ++o) h[b * n_output_ + o] = pb ? pb[o] : 0.0f;
    if (!lstm::IsZeroVector(hidden, nb * nc)) {
      quantize_rows(hidden, nc, hidden_q, sf + 2 * nb, zps + 2 * nb);
      const rt::RtTensor* w = ctx.input(kProjectionW);
      lstm::HybridMatVecAccumulate(w->data_as<int8_t>(), n_output_, nc, hidden_q, sf + 2 * nb,
                                   asym ? zps + 2 * nb : nullptr, proj_row_sums_.data(), w->scale(), nb, h);
    }
    if (opt_.proj_clip > 0) lstm::ClipInPlace(h, nb * n_output_, opt_.proj_clip);
  } else {
    std::copy(hidden, hidden + nb * n_output_, h);
  }
  std::copy(h, h + nb * n_output_, out);
}

void LstmKernel::StepInt8(rt::KernelContext& ctx, const int8_t* x, int nb, int8_t* h, int16_t* c, int8_t* out) {
  const int nc = n_cell_;
  const IntParams& p = ip_;
  int16_t* gates = ctx.Scratch<int16_t>(scratch_id_);
  int16_t* gate[4] = {gates, gates + nb * nc, gates + 2 * nb * nc, gates + 3 * nb * nc};
  int16_t* tanh_c = gates + 4 * nb * nc;
  int8_t* hidden = reinterpret_cast<int8_t*>(tanh_c + nb * nc);
  const int peep_index[4] = {kCellToInputW, kCellToForgetW, -1, kCellToOutputW};
  auto compute_gate = [&](int g) {
    int16_t* v = gate[g];
    std::fill(v, v + nb * nc, int16_t{0});
    lstm::IntMatVecAccumulate<int16_t>(x, p.x_bias[g].data(), In<int8_t>(ctx, kInputToInputW + g), p.x_scale_a[g],
                                       p.x_scale_b[g], nb, n_input_, nc, 0, v);
    lstm::IntMatVecAccumulate<int16_t>(h, p.h_bias[g].data(), In<int8_t>(ctx, kRecurrentToInputW + g),
                                       p.h_scale_a[g], p.h_scale_b[g], nb, n_output_, nc, 0, v);
    if (peephole_ && peep_index[g] >= 0 && ctx.input(peep_index[g])) {
      // TFLite 2.9 walks n_output peephole weights per batch row here (equal to n_cell unless
      // projected); mirrored for bit-exactness.
      const int16_t* w = In<int16_t>(ctx, peep_index[g]);
      const int16_t* cs = c;
      int16_t* r = v;
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < n_output_; ++i) {
          int32_t prod = static_cast<int32_t>(w[i]) * *cs++;
          prod = MultiplyByQuantizedMultiplier(prod, p.c_scale_a[g], p.c_scale_b[g]);
          const int32_t sum = prod + *r;
          *r++ = static_cast<int16_t>(std::max(std::min(32767, sum), -32768));
        }
    }
    if (layer_norm_)
      lstm::IntLayerNorm(v, In<int16_t>(ctx, kInputLayerNorm + g), In<int32_t>(ctx, kInputGateBias + g),
                         p.ln_scale_a[g], p.ln_scale_b[g], p.variance_guard[g], nb, nc);
    if (g == kCellGate) lstm::IntTanh(3, v, nb * nc, v);
    else lstm::IntSigmoid(v, nb * nc);
  };
  if (!cifg_) compute_gate(kInputGate);
  compute_gate(kForgetGate);
  compute_gate(kCellGate);
  // Cell update: c = f*c + i*g (CIFG: i = 1 - f), saturating, then clipped.
  for (int i = 0; i < nb * nc; ++i) {
    const int16_t fc = lstm::MulShift16(gate[kForgetGate][i], c[i], 15);
    const int16_t in_gate = cifg_ ? static_cast<int16_t>(32767 - gate[kForgetGate][i]) : gate[kInputGate][i];
    const int16_t ig = lstm::MulShift16(in_gate, gate[kCellGate][i], 30 + p.cell_scale);
    int16_t v = lstm::SaturatingAdd16(fc, ig);
    if (p.cell_clip > 0) v = std::min<int16_t>(std::max<int16_t>(v, static_cast<int16_t>(-p.cell_clip)), p.cell_clip);
    c[i] = v;
  }
  compute_gate(kOutputGate);
  lstm::IntTanh(15 + p.cell_scale, c, nb * nc, tanh_c);
  for (int i = 0; i < nb * nc; ++i) {
    int32_t v = static_cast<int32_t>(gate[kOutputGate][i]) * tanh_c[i];
    v = MultiplyByQuantizedMultiplier(v, p.hidden_scale_a, p.hidden_scale_b);
    v -= p.hidden_zp;
    hidden[i] = static_cast<int8_t>(std::min(std::max(-128, v), 127));
  }
  if (has_projection_) {
    std::fill(h, h + nb * n_output_, int8_t{0});
    lstm::IntMatVecAccumulate<int8_t>(hidden, p.proj_bias.data(), In<int8_t>(ctx, kProjectionW), p.proj_scale_a,
                                      p.proj_scale_b, nb, nc, n_output_, p.output_state_zp, h);
    if (p.proj_clip > 0)
      for (int i = 0; i < nb * n_output_; ++i)
        h[i] = std::min<int8_t>(std::max<int8_t>(h[i], static_cast<int8_t>(-p.proj_clip)), p.proj_clip);
  } else {
    std::copy(hidden, hidden + nb * n_output_, h);
  }
  std::copy(h, h + nb * n_output_, out);
}

// ---------------------------------------------------------------------------------------------
// Invoke: walk the sequence.

Status LstmKernel::Invoke(rt::KernelContext& ctx) {
  if (mode_ == Mode::kInt8 && !int_biases_ready_) ComputeIntegerBiases(ctx);
  if (mode_ == Mode::kHybrid && opt_.asymmetric_quantize_inputs && !row_sums_ready_) ComputeRowSums(ctx);
  rt::RtTensor* input = ctx.input(kInput);
  rt::RtTensor* output = ctx.output(0);
  rt::RtTensor* hs = ctx.input(kOutputState);
  rt::RtTensor* cs = ctx.input(kCellState);
  const int nb_all = n_batch_;
  auto run = [&](auto* x0, auto* out0, auto* h0, auto* c0, auto step) {
    if (opt_.time_major || !sequence_) {
      for (int t = 0; t < max_time_; ++t)
        step(x0 + static_cast<int64_t>(t) * nb_all * n_input_, nb_all, h0, c0,
             out0 + static_cast<int64_t>(t) * nb_all * n_output_);
    } else {
      for (int b = 0; b < nb_all; ++b)
        for (int t = 0; t < max_time_; ++t) {
          const int64_t row = static_cast<int64_t>(b) * max_time_ + t;
          step(x0 + row * n_input_, 1, h0 + static_cast<int64_t>(b) * n_output_, c0 + static_cast<int64_t>(b) * n_cell_,
               out0 + row * n_output_);
        }
    }
  };
  switch (mode_) {
    case Mode::kFloat:
      run(input->data_as<float>(), output->data_as<float>(), hs->data_as<float>(), cs->data_as<float>(),
          [&](const float* x, int nb, float* h, float* c, float* o) { StepFloat(ctx, x, nb, h, c, o); });
      break;
    case Mode::kHybrid:
      run(input->data_as<float>(), output->data_as<float>(), hs->data_as<float>(), cs->data_as<float>(),
          [&](const float* x, int nb, float* h, float* c, float* o) { StepHybrid(ctx, x, nb, h, c, o); });
      break;
    case Mode::kInt8:
      run(input->data_as<int8_t>(), output->data_as<int8_t>(), hs->data_as<int8_t>(), cs->data_as<int16_t>(),
          [&](const int8_t* x, int nb, int8_t* h, int16_t* c, int8_t* o) { StepInt8(ctx, x, nb, h, c, o); });
      break;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Factories

Expected<Mode> ChooseMode(const rt::KernelCreateContext& cc) {
  const Tensor* input = cc.input(kInput);
  const Tensor* w = cc.input(kInputToInputW + kOutputGate);
  if (!input || !w) return cc.Error("input (0) and input-to-output weights (4) are required");
  if (input->type == DType::kFloat32 && w->type == DType::kFloat32) return Mode::kFloat;
  if (input->type == DType::kFloat32 && w->type == DType::kInt8) return Mode::kHybrid;
  if (input->type == DType::kInt8 && w->type == DType::kInt8) return Mode::kInt8;
  return cc.Error("input " + TypeName(input->type) + " with weights " + TypeName(w->type) +
                  " is not supported (float32/float32, float32/int8 hybrid, int8/int8)");
}

Expected<std::unique_ptr<rt::OpKernel>> CreateSequenceLstm(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(Mode mode, ChooseMode(cc));
  const auto& o = GetOptions<tflite::UnidirectionalSequenceLSTMOptionsT>(cc.op);
  Options opt;
  opt.activation = o.fused_activation_function;
  opt.cell_clip = o.cell_clip;
  opt.proj_clip = o.proj_clip;
  opt.time_major = o.time_major;
  opt.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs;
  return std::unique_ptr<rt::OpKernel>(new LstmKernel(mode, /*sequence=*/true, opt));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateLstm(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::LSTMOptionsT>(cc.op);
  if (o.kernel_type != tflite::LSTMKernelType_FULL)
    return cc.Error("only the FULL kernel type is supported (the BASIC 4-output kernel is not)");
  if (cc.num_outputs() != 1) return cc.Error("expects 1 output, has " + std::to_string(cc.num_outputs()));
  ASSIGN_OR_RETURN(Mode mode, ChooseMode(cc));
  Options opt;
  opt.activation = o.fused_activation_function;
  opt.cell_clip = o.cell_clip;
  opt.proj_clip = o.proj_clip;
  opt.time_major = true;
  opt.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs;
  return std::unique_ptr<rt::OpKernel>(new LstmKernel(mode, /*sequence=*/false, opt));
}

}  // namespace

void RegisterRnnKernels(rt::OpRegistry& r);   // ref_rnn.cc
void RegisterSvdfKernels(rt::OpRegistry& r);  // ref_svdf.cc

void RegisterLstmKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM, CreateSequenceLstm);
  r.Add(tflite::BuiltinOperator_LSTM, CreateLstm);
  RegisterRnnKernels(r);
  RegisterSvdfKernels(r);
}

}  // namespace edgeopt::kernels
