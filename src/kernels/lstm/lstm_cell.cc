#include "kernels/lstm/lstm_cell.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/gemm/f32_op_util.h"
#include "kernels/lstm/lstm_math.h"

namespace edgeopt::kernels::lstm {
namespace {

// Gate activation code for sigmoid (TfLiteFusedActivation's kTfLiteActSigmoid; not a schema value).
constexpr int kSigmoid = 6;
constexpr const char* kGateNames[4] = {"input", "forget", "cell", "output"};

// log2 of a power-of-two scale, as TFLite's CheckedLog2.
bool CheckedLog2(float x, int* log2_result) {
  const float x_log2 = std::log(x) * (1.0f / std::log(2.0f));
  const float rounded = std::round(x_log2);
  *log2_result = static_cast<int>(rounded);
  return std::abs(x_log2 - rounded) < 1e-3f;
}

// QuantizeMultiplier for a requantization scale that must stay within what the fixed-point
// multiply handles (a hostile model's huge scale would shift past 31 bits).
bool Decompose(double scale, int32_t* multiplier, int* shift) {
  if (!(scale >= 0.0) || !std::isfinite(scale)) return false;
  QuantizeMultiplier(scale, multiplier, shift);
  return *shift <= 30;
}

void Activate(float* v, int n, int activation) {
  if (activation == kSigmoid)
    for (int i = 0; i < n; ++i) v[i] = Sigmoid(v[i]);
  else
    ApplyActivation(v, n, activation);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Prepare

Status LstmCell::Prepare(const rt::KernelContext& ctx, int n_batch, const rt::RtTensor& input,
                         const rt::RtTensor* aux, const rt::RtTensor& output) {
  auto need = [&](int index, const char* what) -> Status {
    if (!T(ctx, index)) return Error(ctx, std::string(what) + " (input " + std::to_string(index) + ") is missing");
    return Status::Ok();
  };
  for (int g = kForgetGate; g <= kOutputGate; ++g) {
    RETURN_IF_ERROR(need(in_.input_w[g], "input-to-gate weights"));
    RETURN_IF_ERROR(need(in_.recurrent_w[g], "recurrent-to-gate weights"));
    RETURN_IF_ERROR(need(in_.bias[g], "gate bias"));
  }
  RETURN_IF_ERROR(need(in_.output_state, "output state"));
  RETURN_IF_ERROR(need(in_.cell_state, "cell state"));
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const rt::RtTensor* t = ctx.input(i);
    if (t && t->def && t->def->sparsity)
      return ctx.UnsupportedError("sparse tensor " + Describe(*t) + " (input " + std::to_string(i) +
                                  ") is not supported; densify the model");
  }

  n_batch_ = n_batch;
  n_input_ = input.dim(-1);
  const rt::RtTensor* w_out = T(ctx, in_.input_w[kOutputGate]);
  const rt::RtTensor* r_out = T(ctx, in_.recurrent_w[kOutputGate]);
  if (w_out->rank() != 2 || r_out->rank() != 2)
    return Error(ctx, "weights must be 2-D, input-to-output is " + Describe(*w_out) + ", recurrent-to-output " +
                          Describe(*r_out));
  n_cell_ = w_out->dim(0);
  n_output_ = r_out->dim(1);
  if (n_cell_ < 1 || n_output_ < 1 || n_input_ < 1)
    return Error(ctx, "n_cell, n_output and n_input must be >= 1 (input " + Describe(input) + ", weights " +
                          Describe(*w_out) + ", " + Describe(*r_out) + ")");

  cifg_ = T(ctx, in_.input_w[kInputGate]) == nullptr;
  if ((T(ctx, in_.recurrent_w[kInputGate]) == nullptr) != cifg_)
    return Error(ctx, "input-to-input and recurrent-to-input weights must both be present or both absent (CIFG)");
  const bool pi = T(ctx, in_.peephole[kInputGate]), pf = T(ctx, in_.peephole[kForgetGate]),
             po = T(ctx, in_.peephole[kOutputGate]);
  peephole_ = po;
  if (!(((pi || cifg_) && pf && po) || (!pi && !pf && !po)))
    return Error(ctx, "peephole weights must be all present or all absent");
  if (cifg_ && T(ctx, in_.bias[kInputGate])) return Error(ctx, "CIFG LSTM must not have an input gate bias");
  if (!cifg_ && !T(ctx, in_.bias[kInputGate]))
    return Error(ctx, "input gate bias (input " + std::to_string(in_.bias[kInputGate]) + ") is missing");
  projection_ = T(ctx, in_.proj_w) != nullptr;
  if (!projection_ && T(ctx, in_.proj_b)) return Error(ctx, "projection bias without projection weights");
  if (!projection_ && n_output_ != n_cell_)
    return Error(ctx, "without projection n_output (" + std::to_string(n_output_) + ") must equal n_cell (" +
                          std::to_string(n_cell_) + ")");
  layer_norm_ = T(ctx, in_.layer_norm[kForgetGate]) != nullptr;
  if (layer_norm_) {
    if (cifg_ != (T(ctx, in_.layer_norm[kInputGate]) == nullptr))
      return Error(ctx, "input layer-norm coefficients must be present exactly when the input gate is");
    for (int g = kForgetGate; g <= kOutputGate; ++g)
      if (!T(ctx, in_.layer_norm[g])) return Error(ctx, std::string(kGateNames[g]) + " layer-norm coefficients missing");
  }
  use_aux_ = aux && T(ctx, in_.aux_w[kForgetGate]);
  n_aux_ = use_aux_ ? aux->dim(-1) : 0;
  if (use_aux_)
    for (int g = 0; g < 4; ++g)
      if ((g != kInputGate || !cifg_) && !T(ctx, in_.aux_w[g]))
        return Error(ctx, std::string("aux-input-to-") + kGateNames[g] + " weights are missing");

  auto check_shape = [&](int index, std::vector<int32_t> shape, const char* what) -> Status {
    const rt::RtTensor* t = T(ctx, index);
    if (t && t->shape != shape)
      return Error(ctx, std::string(what) + " (input " + std::to_string(index) + ") must be " +
                            rt::ShapeToString(shape) + ", is " + Describe(*t));
    return Status::Ok();
  };
  for (int g = 0; g < 4; ++g) {
    RETURN_IF_ERROR(check_shape(in_.input_w[g], {n_cell_, n_input_}, "input-to-gate weights"));
    RETURN_IF_ERROR(check_shape(in_.recurrent_w[g], {n_cell_, n_output_}, "recurrent-to-gate weights"));
    RETURN_IF_ERROR(check_shape(in_.bias[g], {n_cell_}, "gate bias"));
    RETURN_IF_ERROR(check_shape(in_.peephole[g], {n_cell_}, "peephole weights"));
    if (layer_norm_) RETURN_IF_ERROR(check_shape(in_.layer_norm[g], {n_cell_}, "layer-norm coefficients"));
    if (use_aux_) RETURN_IF_ERROR(check_shape(in_.aux_w[g], {n_cell_, n_aux_}, "aux-input-to-gate weights"));
  }
  RETURN_IF_ERROR(check_shape(in_.proj_w, {n_output_, n_cell_}, "projection weights"));
  RETURN_IF_ERROR(check_shape(in_.proj_b, {n_output_}, "projection bias"));

  const rt::RtTensor* hs = T(ctx, in_.output_state);
  const rt::RtTensor* cs = T(ctx, in_.cell_state);
  for (const rt::RtTensor* s : {hs, cs})
    if (!s->def || !s->def->is_variable) return Error(ctx, "state tensor " + Describe(*s) + " must be a variable tensor");
  if (hs->num_elements() != static_cast<int64_t>(n_batch_) * n_output_)
    return Error(ctx, "output state " + Describe(*hs) + " must hold n_batch*n_output = " +
                          std::to_string(static_cast<int64_t>(n_batch_) * n_output_) + " values");
  if (cs->num_elements() != static_cast<int64_t>(n_batch_) * n_cell_)
    return Error(ctx, "cell state " + Describe(*cs) + " must hold n_batch*n_cell = " +
                          std::to_string(static_cast<int64_t>(n_batch_) * n_cell_) + " values");

  auto check_type = [&](int index, DType want, const char* what) -> Status {
    const rt::RtTensor* t = T(ctx, index);
    if (t && t->type != want)
      return Error(ctx, std::string(what) + " (input " + std::to_string(index) + ") must be " + TypeName(want) +
                            ", is " + Describe(*t));
    return Status::Ok();
  };
  const DType act = mode_ == Mode::kInt8 ? DType::kInt8 : DType::kFloat32;
  const DType weight = mode_ == Mode::kFloat ? DType::kFloat32 : DType::kInt8;
  const DType bias = mode_ == Mode::kInt8 ? DType::kInt32 : DType::kFloat32;
  const DType peep = mode_ == Mode::kInt8 ? DType::kInt16 : weight;
  const DType ln = mode_ == Mode::kInt8 ? DType::kInt16 : DType::kFloat32;
  if (input.type != act) return Error(ctx, "input must be " + TypeName(act) + ", is " + Describe(input));
  if (aux && aux->type != act) return Error(ctx, "aux input must be " + TypeName(act) + ", is " + Describe(*aux));
  for (int g = 0; g < 4; ++g) {
    RETURN_IF_ERROR(check_type(in_.input_w[g], weight, "input-to-gate weights"));
    RETURN_IF_ERROR(check_type(in_.recurrent_w[g], weight, "recurrent-to-gate weights"));
    RETURN_IF_ERROR(check_type(in_.bias[g], bias, "gate bias"));
    RETURN_IF_ERROR(check_type(in_.peephole[g], peep, "peephole weights"));
    if (layer_norm_) RETURN_IF_ERROR(check_type(in_.layer_norm[g], ln, "layer-norm coefficients"));
    if (use_aux_) RETURN_IF_ERROR(check_type(in_.aux_w[g], weight, "aux-input-to-gate weights"));
  }
  RETURN_IF_ERROR(check_type(in_.proj_w, weight, "projection weights"));
  RETURN_IF_ERROR(check_type(in_.proj_b, bias, "projection bias"));
  RETURN_IF_ERROR(check_type(in_.output_state, act, "output state"));
  RETURN_IF_ERROR(check_type(in_.cell_state, mode_ == Mode::kInt8 ? DType::kInt16 : DType::kFloat32, "cell state"));
  if (output.type != act) return Error(ctx, "output must be " + TypeName(act) + ", is " + Describe(output));
  if (opt_.cell_clip < 0 || opt_.proj_clip < 0) return Error(ctx, "cell_clip and proj_clip must be >= 0");

  if (mode_ == Mode::kInt8) RETURN_IF_ERROR(PrepareInteger(ctx, input, output));
  if (mode_ == Mode::kHybrid && opt_.asymmetric_quantize_inputs) ComputeRowSums(ctx);
  return Status::Ok();
}

size_t LstmCell::ScratchBytes() const {
  const size_t rows = static_cast<size_t>(n_batch_);
  const size_t nc = static_cast<size_t>(n_cell_);
  const size_t widest = static_cast<size_t>(std::max({n_input_, n_aux_, n_output_, n_cell_}));
  if (fast_)  // input projections of time_chunk_ steps, gate rows, hidden (all rows padded to 16 floats)
    return (static_cast<size_t>(time_chunk_) * rows * wx_->padded_n() + rows * wx_->padded_n() +
            rows * (nc + gemm::kNr)) * sizeof(float) + 64;
  switch (mode_) {
    case Mode::kFloat:
      return 5 * rows * nc * sizeof(float);  // 4 gates + hidden
    case Mode::kHybrid:
      // 4 gates + hidden, peephole weights, quantized rows (input, aux, state, hidden) with a
      // scale and zero point per row each.
      return 5 * rows * nc * sizeof(float) + nc * sizeof(float) + 4 * rows * widest +
             4 * rows * (sizeof(float) + sizeof(int32_t)) + 64;
    case Mode::kInt8: {
      // 4 gates, tanh(cell), hidden; with VNNI also the sums of the widest product and its x copy.
      size_t bytes = 5 * rows * nc * sizeof(int16_t) + rows * nc + 64;
      if (int_vnni_) {
        size_t sums = 0, copy = 0;
        for (const VnniRows* m : {&vx_, &vh_, &vp_}) {
          sums = std::max(sums, static_cast<size_t>(m->blocks) * 16 * sizeof(int32_t));
          copy = std::max(copy, VnniRowsScratch(*m));
        }
        bytes += sums + copy + 64;
      }
      if (int_row_) bytes = std::max(bytes, IntLstmRowScratch(row_));
      return bytes;
    }
  }
  return 0;
}

int64_t LstmCell::MacsPerRow() const {
  const int gates = cifg_ ? 3 : 4;
  return gates * static_cast<int64_t>(n_cell_) * (n_input_ + n_aux_ + n_output_) +
         (projection_ ? static_cast<int64_t>(n_cell_) * n_output_ : 0);
}

void LstmCell::ComputeRowSums(const rt::KernelContext& ctx) {
  row_sums_ready_ = true;
  auto sums = [&](int index, int rows, int cols, std::vector<int32_t>& out) {
    out.assign(rows, 0);
    const rt::RtTensor* t = T(ctx, index);
    if (!t) return;
    if (!t->data) {
      row_sums_ready_ = false;
      return;
    }
    const int8_t* w = t->data_as<int8_t>();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) out[r] += w[r * cols + c];
  };
  for (int g = 0; g < 4; ++g) {
    sums(in_.input_w[g], n_cell_, n_input_, x_row_sums_[g]);
    sums(in_.recurrent_w[g], n_cell_, n_output_, h_row_sums_[g]);
    if (use_aux_) sums(in_.aux_w[g], n_cell_, n_aux_, aux_row_sums_[g]);
  }
  sums(in_.proj_w, n_output_, n_cell_, proj_row_sums_);
}

Status LstmCell::PrepareInteger(const rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& output) {
  const int num_intermediates = static_cast<int>(ctx.op().intermediates.size());
  if (num_intermediates != 5)
    return ctx.UnsupportedError("integer LSTM needs 5 intermediate tensors (gate and hidden scales), has " +
                                std::to_string(num_intermediates));
  const rt::RtTensor* cell_state = T(ctx, in_.cell_state);
  const rt::RtTensor* output_state = T(ctx, in_.output_state);
  for (const rt::RtTensor* t : {cell_state, output_state, &output, &input})
    if (t->scale() <= 0) return Error(ctx, "integer LSTM tensor " + Describe(*t) + " has no quantization scale");

  float inter_scale[5];
  for (int i = 0; i < 4; ++i) {
    if (layer_norm_) {
      const rt::RtTensor* t = ctx.intermediate(i);
      if (!t || t->scale() <= 0) return Error(ctx, "layer-norm LSTM intermediate " + std::to_string(i) + " has no scale");
      inter_scale[i] = t->scale();
    } else {
      inter_scale[i] = static_cast<float>(std::pow(2, -12));  // Q3.12 gate pre-activations
    }
  }
  const rt::RtTensor* hidden = ctx.intermediate(4);
  if (!hidden || hidden->scale() <= 0) return Error(ctx, "intermediate 4 (hidden state) has no quantization scale");
  inter_scale[4] = hidden->scale();

  IntParams& p = ip_;
  p.cell_clip = opt_.cell_clip > 0.0f
                    ? static_cast<int16_t>(std::min(std::max(opt_.cell_clip / cell_state->scale(), -32768.0f), 32767.0f))
                    : 0;
  p.proj_clip = opt_.proj_clip > 0.0f
                    ? static_cast<int8_t>(std::min(std::max(opt_.proj_clip / output.scale(), -128.0f), 127.0f))
                    : 0;
  if (!CheckedLog2(cell_state->scale(), &p.cell_scale))
    return Error(ctx, "cell state scale " + std::to_string(cell_state->scale()) + " must be a power of two");
  if (15 + p.cell_scale < 0 || 15 + p.cell_scale > 6)
    return ctx.UnsupportedError("cell state scale 2^" + std::to_string(p.cell_scale) +
                                " is outside the supported 2^-15..2^-9");
  WarmIntActTables(15 + p.cell_scale);

  const float input_scale = input.scale();
  const float output_state_scale = output_state->scale();
  auto scale_of = [&](int index) { return T(ctx, index) ? T(ctx, index)->scale() : 1.0f; };
  for (int g = 0; g < 4; ++g) {
    if (g == kInputGate && cifg_) continue;
    // Products in float as TFLite computes them, then decomposed in double.
    const float x_eff = scale_of(in_.input_w[g]) * input_scale / inter_scale[g];
    const float h_eff = scale_of(in_.recurrent_w[g]) * output_state_scale / inter_scale[g];
    bool ok = Decompose(x_eff, &p.x_scale_a[g], &p.x_scale_b[g]) && Decompose(h_eff, &p.h_scale_a[g], &p.h_scale_b[g]);
    if (peephole_ && g != kCellGate) {
      const float c_eff = static_cast<float>(std::pow(2, p.cell_scale) * scale_of(in_.peephole[g]) / inter_scale[g]);
      ok = ok && Decompose(c_eff, &p.c_scale_a[g], &p.c_scale_b[g]);
    }
    const float ln_scale = layer_norm_ ? scale_of(in_.layer_norm[g]) : 1.0f;
    ok = ok && Decompose(ln_scale, &p.ln_scale_a[g], &p.ln_scale_b[g]);
    if (!ok) return Error(ctx, std::string(kGateNames[g]) + " gate: quantization scales give an out-of-range multiplier");
    p.variance_guard[g] = std::max(1, static_cast<int32_t>(10000 * ln_scale));
  }
  const float hidden_eff = static_cast<float>(std::pow(2, -15) / inter_scale[4] * std::pow(2, -15));
  if (!Decompose(hidden_eff, &p.hidden_scale_a, &p.hidden_scale_b))
    return Error(ctx, "hidden state scale gives an out-of-range multiplier");
  if (projection_) {
    const float proj_eff = scale_of(in_.proj_w) * inter_scale[4] / output_state_scale;
    if (!Decompose(proj_eff, &p.proj_scale_a, &p.proj_scale_b))
      return Error(ctx, "projection scales give an out-of-range multiplier");
  }
  p.hidden_zp = hidden->zero_point();
  p.output_state_zp = output_state->zero_point();
  input_zp_ = input.zero_point();
  ComputeIntegerBiases(ctx);
  return Status::Ok();
}

// Effective biases: bias + zero_point * row_sum(weights). With layer norm the gate bias is added
// after normalization, not here.
void LstmCell::ComputeIntegerBiases(const rt::KernelContext& ctx) {
  int_biases_ready_ = true;
  auto fold = [&](int w_index, int bias_index, int32_t zero_point, int rows, int cols, std::vector<int32_t>& out) {
    out.assign(rows, 0);
    const rt::RtTensor* w = T(ctx, w_index);
    if (!w) return;
    const rt::RtTensor* b = T(ctx, bias_index);
    if (!w->data || (b && !b->data)) {
      int_biases_ready_ = false;  // weights computed at run time: fold at invoke
      return;
    }
    if (b) std::copy(b->data_as<int32_t>(), b->data_as<int32_t>() + rows, out.begin());
    if (zero_point != 0) {
      const int8_t* m = w->data_as<int8_t>();
      for (int r = 0; r < rows; ++r) {
        int32_t sum = 0;
        for (int c = 0; c < cols; ++c) sum += m[r * cols + c];
        out[r] += sum * zero_point;
      }
    }
  };
  const int32_t h_zp = -ip_.output_state_zp;
  for (int g = 0; g < 4; ++g) {
    fold(in_.input_w[g], layer_norm_ ? -1 : in_.bias[g], -input_zp_, n_cell_, n_input_, ip_.x_bias[g]);
    fold(in_.recurrent_w[g], -1, h_zp, n_cell_, n_output_, ip_.h_bias[g]);
  }
  // TFLite 2.9 folds the hidden zero point with a positive sign here and subtracts it when
  // quantizing the hidden state (see StepInt8); the two cancel.
  fold(in_.proj_w, in_.proj_b, ip_.hidden_zp, n_output_, n_cell_, ip_.proj_bias);
}

void LstmCell::UseFastIntDot(const rt::KernelContext& ctx, const rt::CpuFeatures& cpu) {
  if (mode_ != Mode::kInt8) return;
  int_vnni_ = int_lanes_ = int_row_ = false;
  vx_ = vh_ = vp_ = VnniRows();  // (a new Prepare keeps no packing of the last one)
  row_ = IntLstmRowPlan();
  if (cpu.has_avx2_fma()) int_dot_ = DotRowsS8Avx2;
  int_requant512_ = int_dot_ && cpu.has_avx512();
  // VNNI: weights packed now, so they must hold these values at every invoke (file constants),
  // and the folded biases must be in place.
  auto constant = [&](int index) {
    const rt::RtTensor* t = T(ctx, index);
    return !t || (t->is_constant() && t->data);
  };
  if (!cpu.has_avx512_vnni() || !int_biases_ready_ || use_aux_ || !constant(in_.proj_w)) return;
  const int8_t* wx[4];
  const int8_t* wh[4];
  int_gates_ = 0;
  for (int g = 0; g < 4; ++g) {
    if (g == kInputGate && cifg_) continue;
    if (!constant(in_.input_w[g]) || !constant(in_.recurrent_w[g])) return;
    wx[int_gates_] = D<int8_t>(ctx, in_.input_w[g]);
    wh[int_gates_] = D<int8_t>(ctx, in_.recurrent_w[g]);
    int_gate_ids_[int_gates_++] = g;
  }
  // Plain cells run whole sequences (int_row_); only the other cells need the stepwise packing.
  if (PrepareIntRow(wx, wh)) return;
  vx_ = PackVnniRows(wx, int_gates_, n_cell_, n_input_);
  vh_ = PackVnniRows(wh, int_gates_, n_cell_, n_output_);
  if (projection_) {
    const int8_t* wp = D<int8_t>(ctx, in_.proj_w);
    vp_ = PackVnniRows(&wp, 1, n_output_, n_cell_);
  }
  int_vnni_ = true;
  int32_t xm[4], hm[4];
  int xs[4], hsh[4];
  std::vector<int32_t> xb[4], hb[4];
  for (int j = 0; j < int_gates_; ++j) {
    const int g = int_gate_ids_[j];
    xm[j] = ip_.x_scale_a[g];
    xs[j] = ip_.x_scale_b[g];
    hm[j] = ip_.h_scale_a[g];
    hsh[j] = ip_.h_scale_b[g];
    xb[j] = ip_.x_bias[g];
    hb[j] = ip_.h_bias[g];
  }
  int_lanes_ = qx_.Set(xm, xs, xb, int_gates_, n_cell_) && qh_.Set(hm, hsh, hb, int_gates_, n_cell_);
}

bool LstmCell::PrepareIntRow(const int8_t* const* wx, const int8_t* const* wh) {
  int_row_ = false;
  const IntParams& p = ip_;
  if (peephole_ || layer_norm_ || projection_ || !IntLstmRowTakes(p.hidden_scale_a, p.hidden_scale_b)) return false;
  IntLstmRowPlan& r = row_;
  r.nc = n_cell_;
  r.blocks = (n_cell_ + 15) / 16;
  r.gates = int_gates_;
  const int stride = r.blocks * 16;
  r.xbias.assign(static_cast<size_t>(r.gates) * stride, 0);
  r.hbias.assign(static_cast<size_t>(r.gates) * stride, 0);
  for (int j = 0; j < r.gates; ++j) {
    const int g = int_gate_ids_[j];
    if (!IntLstmRowTakes(p.x_scale_a[g], p.x_scale_b[g]) || !IntLstmRowTakes(p.h_scale_a[g], p.h_scale_b[g])) return false;
    r.gate_index[g] = j;
    std::copy(p.x_bias[g].begin(), p.x_bias[g].end(), r.xbias.begin() + static_cast<int64_t>(j) * stride);
    std::copy(p.h_bias[g].begin(), p.h_bias[g].end(), r.hbias.begin() + static_cast<int64_t>(j) * stride);
    r.xm[j] = p.x_scale_a[g];
    r.xs[j] = p.x_scale_b[g];
    r.hm[j] = p.h_scale_a[g];
    r.hs[j] = p.h_scale_b[g];
  }
  r.wx = PackVnniRows(wx, r.gates, n_cell_, n_input_, stride);
  r.wh = PackVnniRows(wh, r.gates, n_cell_, n_output_, stride);
  r.cell_shift = 30 + p.cell_scale;
  r.cell_clip = p.cell_clip;
  r.hid_m = p.hidden_scale_a;
  r.hid_s = p.hidden_scale_b;
  r.hid_zp = p.hidden_zp;
  r.sigmoid = Int16ActTable<3, false>();
  r.tanh_gate = IntTanhTable(3);
  r.tanh_cell = IntTanhTable(15 + p.cell_scale);
  int_row_ = r.tanh_cell != nullptr;
  return int_row_;
}

void LstmCell::BeginInvoke(const rt::KernelContext& ctx) {
  if (mode_ == Mode::kInt8 && !int_biases_ready_) ComputeIntegerBiases(ctx);
  if (mode_ == Mode::kHybrid && opt_.asymmetric_quantize_inputs && !row_sums_ready_) ComputeRowSums(ctx);
}

// ---------------------------------------------------------------------------------------------
// Fast float path. The gates' weights are stacked into one [G*n_cell, K] matrix per side (G = 4,
// or 3 without the CIFG input gate) and packed for the float GEMM: the input side (with the gate
// biases, unless layer norm applies them after normalizing) of a run of time steps is one GEMM,
// whose rows then serve as the bias of each step's recurrent matrix-vector product. Same
// arithmetic as the reference steps, in a different order of summation, and the vectorized
// sigmoid / tanh of kernels/activations (relative error <= 3e-7).

constexpr gemm::MinMax kNoClamp = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};

bool LstmCell::PrepareFast(rt::KernelContext& ctx, const rt::CpuFeatures& cpu, int max_time) {
  fast_ = false;
  if ((mode_ != Mode::kFloat && mode_ != Mode::kHybrid) || use_aux_ || !cpu.has_avx2_fma() || max_time < 1)
    return false;
  const int nc = n_cell_;
  // Columns: the sigmoid gates (input, forget, output) first, the cell gate last, so that without
  // peephole and layer norm one activation call takes all sigmoid gates (StepFloatFast).
  int gates = 0;
  for (int g : {kInputGate, kForgetGate, kOutputGate, kCellGate}) gate_col_[g] = g == kInputGate && cifg_ ? -1 : nc * gates++;
  auto present = [&](int index) {
    const rt::RtTensor* t = T(ctx, index);
    return t && t->data;
  };
  // Weights as float: copied, or (hybrid) dequantized as the reference does, scale * q.
  auto load = [&](int index, float* dst) {
    const rt::RtTensor* t = T(ctx, index);
    const int64_t n = t->num_elements();
    if (t->type == DType::kFloat32) {
      std::copy_n(t->data_as<float>(), n, dst);
    } else {
      const int8_t* q = t->data_as<int8_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = t->scale() * q[i];
    }
  };
  for (int g = 0; g < 4; ++g)
    if (gate_col_[g] >= 0 && (!present(in_.input_w[g]) || !present(in_.recurrent_w[g]) || !present(in_.bias[g])))
      return false;
  if (projection_ && !present(in_.proj_w)) return false;
  for (int g = 0; g < 4; ++g) {
    peephole_f_[g].clear();
    if (peephole_ && g != kCellGate && gate_col_[g] >= 0) {
      if (!present(in_.peephole[g])) return false;
      peephole_f_[g].resize(nc);
      load(in_.peephole[g], peephole_f_[g].data());
    }
  }
  const int n = gates * nc;
  const std::string key = std::string(mode_ == Mode::kHybrid ? "lstm-dequant" : "lstm-f32") +
                          (name_.empty() ? std::string() : "-" + name_);
  auto stack = [&](const int* w_index, int k, bool with_bias) {
    std::vector<float> w(static_cast<size_t>(n) * k), b(static_cast<size_t>(n), 0.0f);
    for (int g = 0; g < 4; ++g) {
      if (gate_col_[g] < 0) continue;
      load(w_index[g], w.data() + static_cast<size_t>(gate_col_[g]) * k);
      if (with_bias) load(in_.bias[g], b.data() + gate_col_[g]);
    }
    return gemm::PackedB::FromNK(w.data(), b.data(), n, k);
  };
  wx_ = GetOrPack<gemm::PackedB>(ctx, key + "-x", [&] { return stack(in_.input_w, n_input_, !layer_norm_); });
  wh_ = GetOrPack<gemm::PackedB>(ctx, key + "-h", [&] { return stack(in_.recurrent_w, n_output_, false); });
  if (projection_)
    wp_ = GetOrPack<gemm::PackedB>(ctx, key + "-p", [&] {
      std::vector<float> w(static_cast<size_t>(n_output_) * nc);
      load(in_.proj_w, w.data());
      return gemm::PackedB::FromNK(w.data(), D<float>(ctx, in_.proj_b), n_output_, nc);
    });
  uk_x_ = &gemm::SelectUkernels(cpu, n_input_, n);
  uk_h_ = &gemm::SelectUkernels(cpu, n_output_, n);
  uk_p_ = &gemm::SelectUkernels(cpu, nc, n_output_);
  act_fn_ = cpu.has_avx512() ? activations::FloatActAvx512 : activations::FloatActAvx2;
  // Input projections of as many steps as fit in ~256 KB (one GEMM), at least one step.
  const size_t step_bytes = static_cast<size_t>(n_batch_) * wx_->padded_n() * sizeof(float);
  time_chunk_ = static_cast<int>(std::clamp<size_t>((256 << 10) / step_bytes, 1, static_cast<size_t>(max_time)));
  fast_ = true;
  return true;
}

void LstmCell::ActivateFast(float* v, int n, int activation) const {
  activations::FloatActParams p;
  if (activation == kSigmoid)
    p.act = activations::FloatAct::kLogistic;
  else if (activation == tflite::ActivationFunctionType_TANH)
    p.act = activations::FloatAct::kTanh;
  else
    return ApplyActivation(v, n, activation);
  act_fn_(p, v, v, n);
}

void LstmCell::StepFloatFast(const rt::KernelContext& ctx, const float* proj, int nb, float* h, float* c, float* out,
                             int out_stride, float* gates, float* hidden) {
  const int nc = n_cell_;
  const size_t np = wx_->padded_n();
  for (int b = 0; b < nb; ++b) {
    float* g = gates + b * np;
    float* cb = c + static_cast<size_t>(b) * nc;
    float* hid = hidden + static_cast<size_t>(b) * (nc + gemm::kNr);
    // Gate pre-activations: input projection (+ bias) + recurrent product, all gates at once.
    uk_h_->gemv(static_cast<size_t>(wh_->n()), static_cast<size_t>(n_output_), h + static_cast<size_t>(b) * n_output_,
                wh_->panel(0), wh_->panel_stride(), proj + b * np, g, kNoClamp);
    auto finish_gate = [&](int gi, int activation, const float* cell) {
      float* v = g + gate_col_[gi];
      if (peephole_ && gi != kCellGate) {
        const float* peep = peephole_f_[gi].data();
        for (int i = 0; i < nc; ++i) v[i] += peep[i] * cell[i];
      }
      if (layer_norm_) {
        const float* ln = D<float>(ctx, in_.layer_norm[gi]);
        const float* bias = D<float>(ctx, in_.bias[gi]);
        MeanStddevNormalization(v, nc, 1);
        for (int i = 0; i < nc; ++i) v[i] = v[i] * ln[i] + bias[i];
      }
      ActivateFast(v, nc, activation);
    };
    // Without peephole and layer norm the gates need nothing but their activation: the sigmoid
    // gates (columns [0, 2 nc) or [0, 3 nc), PrepareFast) in one call, the output gate's too.
    const bool plain = !peephole_ && !layer_norm_;
    if (plain) {
      ActivateFast(g, gate_col_[kCellGate], kSigmoid);
      ActivateFast(g + gate_col_[kCellGate], nc, opt_.activation);
    } else {
      if (!cifg_) finish_gate(kInputGate, kSigmoid, cb);
      finish_gate(kForgetGate, kSigmoid, cb);
      finish_gate(kCellGate, opt_.activation, cb);
    }
    const float* fg = g + gate_col_[kForgetGate];
    const float* cg = g + gate_col_[kCellGate];
    const float* ig = cifg_ ? nullptr : g + gate_col_[kInputGate];
    for (int i = 0; i < nc; ++i) cb[i] = fg[i] * cb[i] + cg[i] * (cifg_ ? 1.0f - fg[i] : ig[i]);
    if (opt_.cell_clip > 0) ClipInPlace(cb, nc, opt_.cell_clip);
    if (!plain) finish_gate(kOutputGate, kSigmoid, cb);
    const float* og = g + gate_col_[kOutputGate];
    std::copy(cb, cb + nc, hid);
    ActivateFast(hid, nc, opt_.activation);
    for (int i = 0; i < nc; ++i) hid[i] *= og[i];
    float* hb = h + static_cast<size_t>(b) * n_output_;
    if (projection_) {
      uk_p_->gemv(static_cast<size_t>(n_output_), static_cast<size_t>(nc), hid, wp_->panel(0), wp_->panel_stride(),
                  wp_->bias(), hb, kNoClamp);
      if (opt_.proj_clip > 0) ClipInPlace(hb, n_output_, opt_.proj_clip);
    } else {
      std::copy(hid, hid + n_output_, hb);
    }
    std::copy(hb, hb + n_output_, out + static_cast<size_t>(b) * out_stride);
  }
}

void LstmCell::RunFloatFast(const rt::KernelContext& ctx, void* scratch, const float* x, float* out, float* h0,
                            float* c0, int max_time, bool time_major, bool forward, int out_stride, int out_offset) {
  const int nb = time_major ? n_batch_ : 1;
  const size_t np = wx_->padded_n();
  float* proj = static_cast<float*>(scratch);
  float* gates = proj + static_cast<size_t>(time_chunk_) * n_batch_ * np;
  float* hidden = gates + static_cast<size_t>(n_batch_) * np;
  for (int blk = 0; blk < (time_major ? 1 : n_batch_); ++blk) {
    float* h = h0 + static_cast<size_t>(blk) * (time_major ? 0 : n_output_);
    float* c = c0 + static_cast<size_t>(blk) * (time_major ? 0 : n_cell_);
    // Row of time step t: time-major [T, B, *] holds the B rows of a step together, batch-major
    // [B, T, *] the T steps of a batch row.
    auto row = [&](int t) -> int64_t {
      return time_major ? static_cast<int64_t>(t) * n_batch_ : static_cast<int64_t>(blk) * max_time + t;
    };
    for (int done = 0; done < max_time; done += time_chunk_) {
      const int steps = std::min(time_chunk_, max_time - done);
      const int lo = forward ? done : max_time - done - steps;  // steps [lo, lo + steps) in time order
      gemm::Gemm(*uk_x_, nullptr, static_cast<size_t>(steps) * nb, x + row(lo) * n_input_, static_cast<size_t>(n_input_),
                 *wx_, proj, np, kNoClamp);
      for (int s = 0; s < steps; ++s) {
        const int t = forward ? lo + s : lo + steps - 1 - s;
        StepFloatFast(ctx, proj + static_cast<size_t>(t - lo) * nb * np, nb, h, c, out + row(t) * out_stride + out_offset,
                      out_stride, gates, hidden);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Steps: nb batch rows at a time (all of them when time-major, one when batch-major).

void LstmCell::StepFloat(const rt::KernelContext& ctx, void* scratch, const float* x, const float* aux, int nb,
                         float* h, float* c, float* out, int out_stride) {
  const int nc = n_cell_;
  float* gates = static_cast<float*>(scratch);
  float* gate[4] = {gates, gates + nb * nc, gates + 2 * nb * nc, gates + 3 * nb * nc};
  float* hidden = gates + 4 * nb * nc;
  auto compute_gate = [&](int g, int activation) {
    float* v = gate[g];
    const float* bias = D<float>(ctx, in_.bias[g]);
    for (int b = 0; b < nb; ++b)
      for (int i = 0; i < nc; ++i) v[b * nc + i] = layer_norm_ ? 0.0f : bias[i];
    MatVecAccumulate(D<float>(ctx, in_.input_w[g]), nc, n_input_, x, nb, v);
    if (use_aux_ && aux) MatVecAccumulate(D<float>(ctx, in_.aux_w[g]), nc, n_aux_, aux, nb, v);
    MatVecAccumulate(D<float>(ctx, in_.recurrent_w[g]), nc, n_output_, h, nb, v);
    const float* peep = peephole_ ? D<float>(ctx, in_.peephole[g]) : nullptr;
    if (peep)
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] += peep[i] * c[b * nc + i];
    if (layer_norm_) {
      const float* ln = D<float>(ctx, in_.layer_norm[g]);
      MeanStddevNormalization(v, nc, nb);
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] = v[b * nc + i] * ln[i] + bias[i];
    }
    Activate(v, nb * nc, activation);
  };
  if (!cifg_) compute_gate(kInputGate, kSigmoid);
  compute_gate(kForgetGate, kSigmoid);
  compute_gate(kCellGate, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) {
    const float in_gate = cifg_ ? 1.0f - gate[kForgetGate][i] : gate[kInputGate][i];
    c[i] = gate[kForgetGate][i] * c[i] + gate[kCellGate][i] * in_gate;
  }
  if (opt_.cell_clip > 0) ClipInPlace(c, nb * nc, opt_.cell_clip);
  compute_gate(kOutputGate, kSigmoid);
  std::copy(c, c + nb * nc, hidden);
  ApplyActivation(hidden, nb * nc, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) hidden[i] = gate[kOutputGate][i] * hidden[i];
  if (projection_) {
    const float* pb = D<float>(ctx, in_.proj_b);
    for (int b = 0; b < nb; ++b)
      for (int o = 0; o < n_output_; ++o) h[b * n_output_ + o] = pb ? pb[o] : 0.0f;
    MatVecAccumulate(D<float>(ctx, in_.proj_w), n_output_, nc, hidden, nb, h);
    if (opt_.proj_clip > 0) ClipInPlace(h, nb * n_output_, opt_.proj_clip);
  } else {
    std::copy(hidden, hidden + nb * n_output_, h);
  }
  for (int b = 0; b < nb; ++b) std::copy(h + b * n_output_, h + (b + 1) * n_output_, out + b * out_stride);
}

void LstmCell::StepHybrid(const rt::KernelContext& ctx, void* scratch, const float* x, const float* aux, int nb,
                          float* h, float* c, float* out, int out_stride) {
  const int nc = n_cell_;
  const int widest = std::max({n_input_, n_aux_, n_output_, n_cell_});
  float* gates = static_cast<float*>(scratch);
  float* gate[4] = {gates, gates + nb * nc, gates + 2 * nb * nc, gates + 3 * nb * nc};
  float* hidden = gates + 4 * nb * nc;
  float* recovered = hidden + nb * nc;
  float* sf = recovered + nc;  // 4 * nb scaling factors: input, aux, state, hidden
  int32_t* zps = reinterpret_cast<int32_t*>(sf + 4 * nb);
  int8_t* xq = reinterpret_cast<int8_t*>(zps + 4 * nb);
  int8_t* aq = xq + nb * widest;
  int8_t* hq = aq + nb * widest;
  int8_t* hidden_q = hq + nb * widest;
  const bool asym = opt_.asymmetric_quantize_inputs;
  auto quantize_rows = [&](const float* v, int n, int8_t* q, float* s, int32_t* z) {
    for (int b = 0; b < nb; ++b) {
      if (asym) AsymmetricQuantize(v + b * n, n, q + b * n, &s[b], &z[b]);
      else SymmetricQuantize(v + b * n, n, q + b * n, &s[b]);
    }
  };
  // As TFLite: all-zero operands are neither quantized nor multiplied.
  const bool x_zero = IsZeroVector(x, nb * n_input_);
  const bool a_zero = !(use_aux_ && aux) || IsZeroVector(aux, nb * n_aux_);
  const bool h_zero = IsZeroVector(h, nb * n_output_);
  if (!x_zero) quantize_rows(x, n_input_, xq, sf, zps);
  if (!a_zero) quantize_rows(aux, n_aux_, aq, sf + nb, zps + nb);
  if (!h_zero) quantize_rows(h, n_output_, hq, sf + 2 * nb, zps + 2 * nb);
  auto accumulate = [&](int w_index, int cols, const int8_t* q, int slot, const std::vector<int32_t>& sums, float* v) {
    const rt::RtTensor* w = T(ctx, w_index);
    HybridMatVecAccumulate(w->data_as<int8_t>(), nc, cols, q, sf + slot * nb, asym ? zps + slot * nb : nullptr,
                           sums.data(), w->scale(), nb, v);
  };
  auto compute_gate = [&](int g, int activation) {
    float* v = gate[g];
    const float* bias = D<float>(ctx, in_.bias[g]);
    for (int b = 0; b < nb; ++b)
      for (int i = 0; i < nc; ++i) v[b * nc + i] = layer_norm_ ? 0.0f : bias[i];
    if (!x_zero) accumulate(in_.input_w[g], n_input_, xq, 0, x_row_sums_[g], v);
    if (!a_zero) accumulate(in_.aux_w[g], n_aux_, aq, 1, aux_row_sums_[g], v);
    if (!h_zero) accumulate(in_.recurrent_w[g], n_output_, hq, 2, h_row_sums_[g], v);
    const rt::RtTensor* peep = peephole_ ? T(ctx, in_.peephole[g]) : nullptr;
    if (peep) {
      const int8_t* wq = peep->data_as<int8_t>();
      for (int i = 0; i < nc; ++i) recovered[i] = peep->scale() * wq[i];
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] += recovered[i] * c[b * nc + i];
    }
    if (layer_norm_) {
      const float* ln = D<float>(ctx, in_.layer_norm[g]);
      MeanStddevNormalization(v, nc, nb);
      for (int b = 0; b < nb; ++b)
        for (int i = 0; i < nc; ++i) v[b * nc + i] = v[b * nc + i] * ln[i] + bias[i];
    }
    Activate(v, nb * nc, activation);
  };
  if (!cifg_) compute_gate(kInputGate, kSigmoid);
  compute_gate(kForgetGate, kSigmoid);
  compute_gate(kCellGate, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) {
    const float in_gate = cifg_ ? 1.0f - gate[kForgetGate][i] : gate[kInputGate][i];
    c[i] = gate[kForgetGate][i] * c[i] + gate[kCellGate][i] * in_gate;
  }
  if (opt_.cell_clip > 0) ClipInPlace(c, nb * nc, opt_.cell_clip);
  compute_gate(kOutputGate, kSigmoid);
  std::copy(c, c + nb * nc, hidden);
  ApplyActivation(hidden, nb * nc, opt_.activation);
  for (int i = 0; i < nb * nc; ++i) hidden[i] = gate[kOutputGate][i] * hidden[i];
  if (projection_) {
    const float* pb = D<float>(ctx, in_.proj_b);
    for (int b = 0; b < nb; ++b)
      for (int o = 0; o < n_output_; ++o) h[b * n_output_ + o] = pb ? pb[o] : 0.0f;
    if (!IsZeroVector(hidden, nb * nc)) {
      quantize_rows(hidden, nc, hidden_q, sf + 3 * nb, zps + 3 * nb);
      const rt::RtTensor* w = T(ctx, in_.proj_w);
      HybridMatVecAccumulate(w->data_as<int8_t>(), n_output_, nc, hidden_q, sf + 3 * nb, asym ? zps + 3 * nb : nullptr,
                             proj_row_sums_.data(), w->scale(), nb, h);
    }
    if (opt_.proj_clip > 0) ClipInPlace(h, nb * n_output_, opt_.proj_clip);
  } else {
    std::copy(hidden, hidden + nb * n_output_, h);
  }
  for (int b = 0; b < nb; ++b) std::copy(h + b * n_output_, h + (b + 1) * n_output_, out + b * out_stride);
}

// The VNNI path's scratch after StepInt8's gates, tanh(cell) and hidden rows (for nb batch rows):
// the sums of one product (64-byte aligned), then the copy of its x.
LstmCell::VnniScratch LstmCell::SplitVnniScratch(void* scratch, int nb) const {
  const size_t rows = static_cast<size_t>(nb) * n_cell_;
  const auto after = reinterpret_cast<uintptr_t>(scratch) + 5 * rows * sizeof(int16_t) + rows;
  VnniScratch v;
  v.sums = reinterpret_cast<int32_t*>((after + 63) & ~uintptr_t{63});
  const size_t most = static_cast<size_t>(std::max({vx_.blocks, vh_.blocks, vp_.blocks})) * 16;
  v.x_copy = reinterpret_cast<uint8_t*>(v.sums + most);
  return v;
}

void LstmCell::StepInt8(const rt::KernelContext& ctx, void* scratch, const int8_t* x, int nb, int8_t* h, int16_t* c,
                        int8_t* out) {
  const int nc = n_cell_;
  const IntParams& p = ip_;
  int16_t* gates = static_cast<int16_t*>(scratch);
  int16_t* gate[4] = {gates, gates + nb * nc, gates + 2 * nb * nc, gates + 3 * nb * nc};
  int16_t* tanh_c = gates + 4 * nb * nc;
  int8_t* hidden = reinterpret_cast<int8_t*>(tanh_c + nb * nc);
  const VnniScratch vs = int_vnni_ ? SplitVnniScratch(scratch, nb) : VnniScratch{};
  int32_t* sums = vs.sums;
  uint8_t* x_copy = vs.x_copy;
  // The gates' pre-activations: the input side requantized into zeros, then the recurrent side
  // added (each saturating to int16). They do not depend on the cell state, so with VNNI both
  // sides of all gates come first, one product per side and batch row.
  if (int_vnni_) {
    for (int j = 0; j < int_gates_; ++j) std::fill(gate[int_gate_ids_[j]], gate[int_gate_ids_[j]] + nb * nc, int16_t{0});
    const bool lanes = int_lanes_ && nb == 1;
    if (lanes) {
      // One batch row: gate g's rows at gates + g * nc, the present gates' one after another.
      int16_t* first = gate[int_gate_ids_[0]];
      VnniRowsDot(vx_, x, x_copy, sums);
      RequantLanesAvx512(sums, qx_, first);
      VnniRowsDot(vh_, h, x_copy, sums);
      RequantLanesAvx512(sums, qh_, first);
    }
    for (int b = 0; b < (lanes ? 0 : nb); ++b) {
      VnniRowsDot(vx_, x + b * n_input_, x_copy, sums);
      for (int j = 0; j < int_gates_; ++j) {
        const int g = int_gate_ids_[j];
        RequantRowsAvx512(sums + j * nc, p.x_bias[g].data(), nc, p.x_scale_a[g], p.x_scale_b[g], 0, gate[g] + b * nc);
      }
      VnniRowsDot(vh_, h + b * n_output_, x_copy, sums);
      for (int j = 0; j < int_gates_; ++j) {
        const int g = int_gate_ids_[j];
        RequantRowsAvx512(sums + j * nc, p.h_bias[g].data(), nc, p.h_scale_a[g], p.h_scale_b[g], 0, gate[g] + b * nc);
      }
    }
  }
  auto compute_gate = [&](int g) {
    int16_t* v = gate[g];
    if (!int_vnni_) {
      std::fill(v, v + nb * nc, int16_t{0});
      IntMatVecAccumulate<int16_t>(x, p.x_bias[g].data(), D<int8_t>(ctx, in_.input_w[g]), p.x_scale_a[g],
                                   p.x_scale_b[g], nb, n_input_, nc, 0, v, int_dot_, int_requant512_);
      IntMatVecAccumulate<int16_t>(h, p.h_bias[g].data(), D<int8_t>(ctx, in_.recurrent_w[g]), p.h_scale_a[g],
                                   p.h_scale_b[g], nb, n_output_, nc, 0, v, int_dot_, int_requant512_);
    }
    const int16_t* w = peephole_ ? D<int16_t>(ctx, in_.peephole[g]) : nullptr;
    if (w) {
      // TFLite 2.9 walks n_output peephole weights per batch row here (equal to n_cell unless
      // projected); mirrored for bit-exactness.
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
      IntLayerNorm(v, D<int16_t>(ctx, in_.layer_norm[g]), D<int32_t>(ctx, in_.bias[g]), p.ln_scale_a[g],
                   p.ln_scale_b[g], p.variance_guard[g], nb, nc);
    if (g == kCellGate) IntTanh(3, v, nb * nc, v);
    else IntSigmoid(v, nb * nc);
  };
  if (!cifg_) compute_gate(kInputGate);
  compute_gate(kForgetGate);
  compute_gate(kCellGate);
  // Cell update: c = f*c + i*g (CIFG: i = 1 - f), saturating, then clipped.
  if (int_vnni_) {
    CellUpdateAvx512(gate[kForgetGate], cifg_ ? nullptr : gate[kInputGate], gate[kCellGate], nb * nc,
                     30 + p.cell_scale, p.cell_clip, c);
  }
  for (int i = 0; i < (int_vnni_ ? 0 : nb * nc); ++i) {
    const int16_t fc = MulShift16(gate[kForgetGate][i], c[i], 15);
    const int16_t in_gate = cifg_ ? static_cast<int16_t>(32767 - gate[kForgetGate][i]) : gate[kInputGate][i];
    const int16_t ig = MulShift16(in_gate, gate[kCellGate][i], 30 + p.cell_scale);
    int16_t v = SaturatingAdd16(fc, ig);
    if (p.cell_clip > 0) v = std::min<int16_t>(std::max<int16_t>(v, static_cast<int16_t>(-p.cell_clip)), p.cell_clip);
    c[i] = v;
  }
  compute_gate(kOutputGate);
  IntTanh(15 + p.cell_scale, c, nb * nc, tanh_c);
  const bool hidden_done = int_vnni_ && HiddenAvx512(gate[kOutputGate], tanh_c, nb * nc, p.hidden_scale_a,
                                                     p.hidden_scale_b, p.hidden_zp, hidden);
  for (int i = 0; i < (hidden_done ? 0 : nb * nc); ++i) {
    int32_t v = static_cast<int32_t>(gate[kOutputGate][i]) * tanh_c[i];
    v = MultiplyByQuantizedMultiplier(v, p.hidden_scale_a, p.hidden_scale_b);
    v -= p.hidden_zp;  // TFLite 2.9's sign (see ComputeIntegerBiases)
    hidden[i] = static_cast<int8_t>(std::min(std::max(-128, v), 127));
  }
  if (projection_) {
    std::fill(h, h + nb * n_output_, int8_t{0});
    if (int_vnni_) {
      for (int b = 0; b < nb; ++b) {
        VnniRowsDot(vp_, hidden + b * nc, x_copy, sums);
        RequantRowsAvx512(sums, p.proj_bias.data(), n_output_, p.proj_scale_a, p.proj_scale_b, p.output_state_zp,
                          h + b * n_output_);
      }
    } else {
      IntMatVecAccumulate<int8_t>(hidden, p.proj_bias.data(), D<int8_t>(ctx, in_.proj_w), p.proj_scale_a,
                                  p.proj_scale_b, nb, nc, n_output_, p.output_state_zp, h, int_dot_,
                                  int_requant512_);
    }
    if (p.proj_clip > 0)
      for (int i = 0; i < nb * n_output_; ++i)
        h[i] = std::min<int8_t>(std::max<int8_t>(h[i], static_cast<int8_t>(-p.proj_clip)), p.proj_clip);
  } else {
    std::copy(hidden, hidden + nb * n_output_, h);
  }
  std::copy(h, h + nb * n_output_, out);
}

// ---------------------------------------------------------------------------------------------
// Walking the sequence.

Status LstmCell::Run(const rt::KernelContext& ctx, void* scratch, const rt::RtTensor& input, const rt::RtTensor* aux,
                     rt::RtTensor& output, int max_time, bool time_major, bool forward, int out_stride,
                     int out_offset) {
  BeginInvoke(ctx);
  const rt::RtTensor* aux_used = use_aux_ ? aux : nullptr;
  rt::RtTensor* hs = ctx.input(in_.output_state);
  rt::RtTensor* cs = ctx.input(in_.cell_state);
  const int nb_all = n_batch_;
  auto walk = [&](auto* x0, auto* a0, auto* out0, auto* h0, auto* c0, auto step) {
    for (int b = 0; b < (time_major ? 1 : nb_all); ++b)
      for (int t = 0; t < max_time; ++t) {
        const int tr = forward ? t : max_time - 1 - t;
        if (time_major) {
          const int64_t row = static_cast<int64_t>(tr) * nb_all;
          step(x0 + row * n_input_, a0 ? a0 + row * n_aux_ : nullptr, nb_all, h0, c0,
               out0 + row * out_stride + out_offset);
        } else {
          const int64_t row = static_cast<int64_t>(b) * max_time + tr;
          step(x0 + row * n_input_, a0 ? a0 + row * n_aux_ : nullptr, 1, h0 + static_cast<int64_t>(b) * n_output_,
               c0 + static_cast<int64_t>(b) * n_cell_, out0 + row * out_stride + out_offset);
        }
      }
  };
  if (fast_) {  // float, or hybrid on dequantized weights
    RunFloatFast(ctx, scratch, input.data_as<float>(), output.data_as<float>(), hs->data_as<float>(),
                 cs->data_as<float>(), max_time, time_major, forward, out_stride, out_offset);
    return Status::Ok();
  }
  switch (mode_) {
    case Mode::kFloat:
      walk(input.data_as<float>(), aux_used ? aux_used->data_as<float>() : nullptr, output.data_as<float>(),
           hs->data_as<float>(), cs->data_as<float>(),
           [&](const float* x, const float* a, int nb, float* h, float* c, float* o) {
             StepFloat(ctx, scratch, x, a, nb, h, c, o, out_stride);
           });
      break;
    case Mode::kHybrid:
      walk(input.data_as<float>(), aux_used ? aux_used->data_as<float>() : nullptr, output.data_as<float>(),
           hs->data_as<float>(), cs->data_as<float>(),
           [&](const float* x, const float* a, int nb, float* h, float* c, float* o) {
             StepHybrid(ctx, scratch, x, a, nb, h, c, o, out_stride);
           });
      break;
    case Mode::kInt8:
      if (out_stride != n_output_ || out_offset != 0 || aux_used)
        return Error(ctx, "integer LSTM supports neither merged outputs nor an auxiliary input");
      if (int_row_ && forward) {
        // Batch row by batch row, each a whole sequence (the rows are independent).
        const int64_t rows_apart = time_major ? nb_all : 1;  // between a batch row's steps
        for (int b = 0; b < nb_all; ++b) {
          const int64_t first = time_major ? b : int64_t{b} * max_time;  // the row of step 0
          RunIntLstmRowAvx512(row_, input.data_as<int8_t>() + first * n_input_, rows_apart * n_input_, max_time,
                              hs->data_as<int8_t>() + int64_t{b} * n_output_, cs->data_as<int16_t>() + int64_t{b} * n_cell_,
                              output.data_as<int8_t>() + first * n_output_, rows_apart * n_output_,
                              static_cast<uint8_t*>(scratch));
        }
        break;
      }
      walk(input.data_as<int8_t>(), static_cast<const int8_t*>(nullptr), output.data_as<int8_t>(),
           hs->data_as<int8_t>(), cs->data_as<int16_t>(),
           [&](const int8_t* x, const int8_t*, int nb, int8_t* h, int16_t* c, int8_t* o) {
             StepInt8(ctx, scratch, x, nb, h, c, o);
           });
      break;
  }
  return Status::Ok();
}

}  // namespace edgeopt::kernels::lstm
