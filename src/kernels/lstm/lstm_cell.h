// One LSTM cell (one direction) with TFLite 2.9 semantics, shared by UNIDIRECTIONAL_SEQUENCE_LSTM,
// LSTM and BIDIRECTIONAL_SEQUENCE_LSTM. The op kernels say where the cell's tensors sit among
// their inputs (CellInputs), validate once per prepare, then walk the sequence step by step.
//
// Variants:
//   float   all float32 (peephole, projection, layer norm, CIFG, clipping, auxiliary input)
//   hybrid  float32 activations, int8 weights: activations are quantized per row at run time
//           (symmetric, or asymmetric with `asymmetric_quantize_inputs`), int32 dot products,
//           float gate math
//   int8    full integer 8x8->16 (TFLite's EvalInteger8x8_16): int8 input/output/output state,
//           int16 cell state (power-of-two scale), int32 biases, int16 peephole and layer-norm
//           weights; gate pre-activations are int16 at the scales of intermediates 0..3
//           (2^-12 without layer norm) and the hidden state at intermediate 4's scale.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/activations/float_act.h"
#include "kernels/common/kernel_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/lstm/lstm_math.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels::lstm {

constexpr int kInputGate = 0, kForgetGate = 1, kCellGate = 2, kOutputGate = 3;

enum class Mode { kFloat, kHybrid, kInt8 };

// Positions of one cell's tensors among the op's inputs; -1 where the op has none. Peephole and
// layer-norm entries are indexed by gate (the cell gate has no peephole).
struct CellInputs {
  int input_w[4];
  int recurrent_w[4];
  int peephole[4];
  int bias[4];
  int proj_w, proj_b;
  int layer_norm[4];
  int aux_w[4];
  int output_state, cell_state;
};

struct CellOptions {
  int activation = tflite::ActivationFunctionType_TANH;
  float cell_clip = 0, proj_clip = 0;
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

class LstmCell {
 public:
  LstmCell(Mode mode, CellInputs inputs, CellOptions options, std::string name)
      : mode_(mode), in_(inputs), opt_(options), name_(std::move(name)) {}

  // Checks the cell's tensors for `n_batch` rows of `input` (and `aux` when given, whose last
  // dimension is the auxiliary input size); `output` is the tensor the cell writes (int8: its
  // scale bounds the projection clip). Computes integer parameters and row sums.
  Status Prepare(const rt::KernelContext& ctx, int n_batch, const rt::RtTensor& input, const rt::RtTensor* aux,
                 const rt::RtTensor& output);
  // Fast float path (float or hybrid mode, constant weights, no auxiliary input; call after
  // Prepare, with the CPU the kernels may use): the gate weights are packed into one GEMM panel
  // set per side, the input side of a whole run of time steps is one GEMM and each step's
  // recurrent side one matrix-vector product; the gate activations are vectorized. Hybrid cells
  // dequantize their int8 weights here (scale * q) and then run in float: closer to the float
  // model than TFLite's hybrid arithmetic, which also quantizes the activations at every step.
  // Returns false (the reference steps run) when the cell does not qualify. Agrees with the
  // reference float steps on the same (dequantized) weights within float rounding
  // (kernels/lstm/lstm_test.cc states the tolerance).
  bool PrepareFast(rt::KernelContext& ctx, const rt::CpuFeatures& cpu, int max_time);
  bool fast() const { return fast_; }
  void DisableFast() { fast_ = false; }
  // Integer cells: the reference steps with their matrix-vector dot products on AVX2 (same
  // integers), or with AVX-512 VNNI and constant weights, each side's gates stacked into one
  // packed matrix (VnniRows: one product per side and step for all gates). Call after Prepare.
  void UseFastIntDot(const rt::KernelContext& ctx, const rt::CpuFeatures& cpu);
  // Last part of the variant name: the ISA of the fast path ("dequant-<isa>" for hybrid cells), or "ref".
  std::string variant_suffix() const {
    if (int_row_) return "avx512vnni/sequence";
    if (int_vnni_) return "avx512vnni";
    if (int_dot_) return int_requant512_ ? "avx512" : "avx2";
    return fast_ ? std::string(mode_ == Mode::kHybrid ? "dequant-" : "") + uk_h_->isa : "ref";
  }
  size_t PackedBytes() const {
    if (int_vnni_ || int_row_) {
      size_t n = 0;
      for (const VnniRows* m : {&vx_, &vh_, &vp_, &row_.wx, &row_.wh}) n += m->w.size() + 4 * m->corr.size();
      return n;
    }
    return fast_ ? wx_->bytes() + wh_->bytes() + (wp_ ? wp_->bytes() : 0) : 0;
  }

  // Bytes of scratch one step needs (request once, shared by the cells of an op); with the fast
  // path, also the input projections of a run of time steps.
  size_t ScratchBytes() const;

  // Before the first step of an invoke: folds anything that needs run-time weights.
  void BeginInvoke(const rt::KernelContext& ctx);
  // One time step for nb rows: x [nb, n_input] (aux [nb, n_aux] or null), state rows h/c,
  // output rows written `out_stride` apart.
  void StepFloat(const rt::KernelContext& ctx, void* scratch, const float* x, const float* aux, int nb, float* h,
                 float* c, float* out, int out_stride);
  void StepHybrid(const rt::KernelContext& ctx, void* scratch, const float* x, const float* aux, int nb, float* h,
                  float* c, float* out, int out_stride);
  void StepInt8(const rt::KernelContext& ctx, void* scratch, const int8_t* x, int nb, int8_t* h, int16_t* c,
                int8_t* out);

  // Walks a sequence: time-major [T, B, *] or batch-major [B, T, *], forward or backward.
  // `out_offset` places this cell's values inside wider output rows (merged bidirectional).
  Status Run(const rt::KernelContext& ctx, void* scratch, const rt::RtTensor& input, const rt::RtTensor* aux,
             rt::RtTensor& output, int max_time, bool time_major, bool forward, int out_stride, int out_offset);

  int n_cell() const { return n_cell_; }
  int n_output() const { return n_output_; }
  int64_t MacsPerRow() const;

 private:
  const rt::RtTensor* T(const rt::KernelContext& ctx, int index) const {
    return index < 0 ? nullptr : ctx.input(index);
  }
  template <typename V>
  const V* D(const rt::KernelContext& ctx, int index) const {
    const rt::RtTensor* t = T(ctx, index);
    return t ? t->data_as<V>() : nullptr;
  }
  Status Error(const rt::KernelContext& ctx, const std::string& message) const {
    return ctx.Error(name_.empty() ? message : name_ + " " + message);
  }
  Status PrepareInteger(const rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& output);
  void RunFloatFast(const rt::KernelContext& ctx, void* scratch, const float* x, float* out, float* h0, float* c0,
                    int max_time, bool time_major, bool forward, int out_stride, int out_offset);
  void StepFloatFast(const rt::KernelContext& ctx, const float* proj, int nb, float* h, float* c, float* out,
                     int out_stride, float* gates, float* hidden);
  void ActivateFast(float* v, int n, int activation) const;
  void ComputeIntegerBiases(const rt::KernelContext& ctx);
  void ComputeRowSums(const rt::KernelContext& ctx);

  Mode mode_;
  CellInputs in_;
  CellOptions opt_;
  std::string name_;  // "forward"/"backward" in messages of bidirectional ops
  bool cifg_ = false, peephole_ = false, layer_norm_ = false, projection_ = false, use_aux_ = false;
  int n_batch_ = 0, n_input_ = 0, n_aux_ = 0, n_cell_ = 0, n_output_ = 0;
  int32_t input_zp_ = 0;
  IntParams ip_;
  bool int_biases_ready_ = false;
  // Hybrid asymmetric: row sums of each weight matrix.
  std::vector<int32_t> x_row_sums_[4], h_row_sums_[4], aux_row_sums_[4], proj_row_sums_;
  bool row_sums_ready_ = false;
  // Fast float path.
  bool fast_ = false;
  int gate_col_[4] = {-1, -1, -1, -1};  // first column of each gate in the packed gate rows (-1: CIFG input)
  int time_chunk_ = 1;                  // time steps whose input projections one GEMM computes
  std::shared_ptr<const gemm::PackedB> wx_, wh_, wp_;  // input side (+ bias), recurrent side, projection
  const gemm::Ukernels* uk_x_ = nullptr;
  const gemm::Ukernels* uk_h_ = nullptr;
  const gemm::Ukernels* uk_p_ = nullptr;
  activations::FloatActFn act_fn_ = nullptr;
  std::vector<float> peephole_f_[4];  // peephole weights as float (dequantized for hybrid cells)
  IntRowsDotFn int_dot_ = nullptr;    // integer cells: the AVX2 dot products (null: the portable loop)
  bool int_requant512_ = false;       // and their requantization on AVX-512 (RequantRowsAvx512)
  // Integer cells on AVX-512 VNNI: the present gates (int_gates_ of them, in gate order) stacked per
  // side (input, recurrent) and the projection.
  bool int_vnni_ = false;
  int int_gates_ = 0, int_gate_ids_[4] = {};
  VnniRows vx_, vh_, vp_;
  // Steps of one batch row (the gates' rows then lie one after another in the scratch): each side's
  // rows requantized in one pass, with per-row constants (int_lanes_: every gate's multiplier
  // allows it).
  bool int_lanes_ = false;
  LaneRequant qx_, qh_;
  // Cells without peephole, layer norm or projection: whole sequences of a batch row at once
  // (RunIntLstmRowAvx512; int_vnni_ then stays off, and the never-taken backward walk runs the
  // AVX2 products). PrepareIntRow (given the present gates' weights of each side, as
  // UseFastIntDot collects them): whether the cell takes it.
  bool int_row_ = false;
  IntLstmRowPlan row_;
  bool PrepareIntRow(const int8_t* const* wx, const int8_t* const* wh);
  struct VnniScratch {
    int32_t* sums = nullptr;
    uint8_t* x_copy = nullptr;
  };
  VnniScratch SplitVnniScratch(void* scratch, int nb) const;
};

}  // namespace edgeopt::kernels::lstm
