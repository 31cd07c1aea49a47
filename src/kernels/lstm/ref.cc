// UNIDIRECTIONAL_SEQUENCE_LSTM, LSTM (full kernel) and BIDIRECTIONAL_SEQUENCE_LSTM reference
// kernels, TFLite 2.9 semantics; the cell math lives in lstm_cell.{h,cc}.
//
// The output state and cell state inputs are variable tensors updated in place, so state carries
// over from one invoke to the next.
//
// BIDIRECTIONAL_SEQUENCE_LSTM (48 inputs): a forward cell walks the sequence forward and a
// backward cell walks it backward; with merge_outputs both write into one output (forward values
// first), else each has its own. An auxiliary input (39) feeds both cells through their aux
// weights (40..47); given without aux weights it replaces the backward cell's input (stacked
// bidirectional layers without cross links), as in TFLite. Float and hybrid only (as 2.9).
// Two 2.9 defects are not reproduced: it steps the aux input by the input size (wrong unless
// the sizes are equal) and, batch-major with merged outputs, the state rows by the merged width
// (past the end of the state tensors); edgeopt uses the real strides. fw and bw may also differ
// in output size here (2.9 rejects that).
#include <memory>
#include <optional>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/lstm/lstm_cell.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

using lstm::CellInputs;
using lstm::CellOptions;
using lstm::LstmCell;
using lstm::Mode;

constexpr int kInput = 0;
constexpr int kNone = -1;

// TFLite's lstm::full input positions.
constexpr CellInputs kUniCell = {{1, 2, 3, 4},     {5, 6, 7, 8},     {9, 10, kNone, 11}, {12, 13, 14, 15}, 16, 17,
                                 {20, 21, 22, 23}, {kNone, kNone, kNone, kNone}, 18, 19};
// bidirectional_sequence_lstm input positions.
constexpr CellInputs kFwCell = {{1, 2, 3, 4},   {5, 6, 7, 8},     {9, 10, kNone, 11},
                                {12, 13, 14, 15}, 16, 17,          {kNone, kNone, kNone, kNone},
                                {40, 41, 42, 43}, 35, 36};
constexpr CellInputs kBwCell = {{18, 19, 20, 21}, {22, 23, 24, 25}, {26, 27, kNone, 28},
                                {29, 30, 31, 32}, 33, 34,           {kNone, kNone, kNone, kNone},
                                {44, 45, 46, 47}, 37, 38};
constexpr int kBidiAuxInput = 39;

const char* ModeName(Mode m) { return m == Mode::kFloat ? "f32" : m == Mode::kHybrid ? "hybrid" : "int8"; }

// The CPU the cells' fast paths may use, or none (reference steps only). Float cells
// (LstmCell::PrepareFast) need weights that hold the same values at every invoke (file
// constants, or folded DEQUANTIZE of float16 ones); hybrid cells take the same path on their
// dequantized weights unless HybridDequantAllowed() says no (then they keep TFLite's hybrid
// arithmetic, as the hybrid depthwise does). Integer cells keep the reference steps' integers
// with faster products and vector steps (LstmCell::UseFastIntDot; packed products only for
// constant weights).
std::optional<rt::CpuFeatures> FastCpu(const rt::KernelCreateContext& cc, Mode mode,
                                       std::initializer_list<CellInputs> cells) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return std::nullopt;
  if (mode == Mode::kInt8) return cc.cpu;
  if (mode == Mode::kHybrid && !HybridDequantAllowed()) return std::nullopt;
  auto constant = [&](int index) {
    const Tensor* t = index < 0 ? nullptr : cc.input(index);
    return !t || (t->type == DType::kFloat32 ? ConstantOrFolded(cc, index) : cc.is_constant(index) && !t->sparsity);
  };
  for (const CellInputs& in : cells) {
    for (int g = 0; g < 4; ++g)
      for (int index : {in.input_w[g], in.recurrent_w[g], in.bias[g], in.peephole[g]})
        if (!constant(index)) return std::nullopt;
    for (int index : {in.proj_w, in.proj_b})
      if (!constant(index)) return std::nullopt;
  }
  return cc.cpu;
}

std::string VariantName(const char* op, Mode mode, const LstmCell& cell) {
  return std::string(op) + "/" + ModeName(mode) + "/" + cell.variant_suffix();
}

// UNIDIRECTIONAL_SEQUENCE_LSTM (sequence) and LSTM (one step, 2-D input).
class LstmKernel : public rt::OpKernel {
 public:
  LstmKernel(Mode mode, bool sequence, bool time_major, CellInputs inputs, CellOptions options,
             std::optional<rt::CpuFeatures> fast_cpu)
      : mode_(mode), sequence_(sequence), time_major_(time_major), cell_(mode, inputs, options, ""), fast_cpu_(fast_cpu) {}

  std::string variant() const override {
    return VariantName(sequence_ ? "unidirectional_sequence_lstm" : "lstm", mode_, cell_);
  }
  size_t PackedBytes() const override { return cell_.PackedBytes(); }
  int64_t Macs(const rt::KernelContext&) const override {
    return static_cast<int64_t>(max_time_) * n_batch_ * cell_.MacsPerRow();
  }

  Status Prepare(rt::KernelContext& ctx) override {
    const int n = ctx.num_inputs();
    if (n != 20 && n != 24) return ctx.Error("expects 20 or 24 inputs, has " + std::to_string(n));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    const rt::RtTensor* input = ctx.input(kInput);
    if (!input) return ctx.Error("input (input 0) is missing");
    const int want_rank = sequence_ ? 3 : 2;
    if (input->rank() != want_rank)
      return ctx.Error("input must have rank " + std::to_string(want_rank) + ", is " + Describe(*input));
    max_time_ = sequence_ ? (time_major_ ? input->dim(0) : input->dim(1)) : 1;
    n_batch_ = sequence_ ? (time_major_ ? input->dim(1) : input->dim(0)) : input->dim(0);
    RETURN_IF_ERROR(cell_.Prepare(ctx, n_batch_, *input, nullptr, *ctx.output(0)));
    if (fast_cpu_) {
      cell_.PrepareFast(ctx, *fast_cpu_, max_time_);
      cell_.UseFastIntDot(ctx, *fast_cpu_);
    }
    rt::Shape out_shape = input->shape;
    out_shape.back() = cell_.n_output();
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(out_shape)));
    scratch_id_ = ctx.RequestScratch(cell_.ScratchBytes());
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    return cell_.Run(ctx, ctx.Scratch(scratch_id_), *ctx.input(kInput), nullptr, *ctx.output(0), max_time_,
                     time_major_ || !sequence_, /*forward=*/true, cell_.n_output(), 0);
  }

 private:
  Mode mode_;
  bool sequence_, time_major_;
  LstmCell cell_;
  std::optional<rt::CpuFeatures> fast_cpu_;  // none: reference steps only
  int max_time_ = 0, n_batch_ = 0;
  int scratch_id_ = -1;
};

class BidiLstmKernel : public rt::OpKernel {
 public:
  BidiLstmKernel(Mode mode, bool time_major, bool merge_outputs, CellOptions options,
                 std::optional<rt::CpuFeatures> fast_cpu)
      : mode_(mode), time_major_(time_major), merge_(merge_outputs), fw_(mode, kFwCell, options, "forward"),
        bw_(mode, kBwCell, options, "backward"), fast_cpu_(fast_cpu) {}

  // Both cells take the fast path or neither (Prepare).
  std::string variant() const override { return VariantName("bidirectional_sequence_lstm", mode_, fw_); }
  size_t PackedBytes() const override { return fw_.PackedBytes() + bw_.PackedBytes(); }
  int64_t Macs(const rt::KernelContext&) const override {
    return static_cast<int64_t>(max_time_) * n_batch_ * (fw_.MacsPerRow() + bw_.MacsPerRow());
  }

  Status Prepare(rt::KernelContext& ctx) override {
    if (ctx.num_inputs() != 48) return ctx.Error("expects 48 inputs, has " + std::to_string(ctx.num_inputs()));
    if (ctx.num_outputs() != (merge_ ? 1 : 2))
      return ctx.Error("expects " + std::string(merge_ ? "1 output (merge_outputs)" : "2 outputs") + ", has " +
                       std::to_string(ctx.num_outputs()));
    const rt::RtTensor* input = ctx.input(kInput);
    if (!input || input->rank() != 3)
      return ctx.Error("input must have rank 3, is " + (input ? Describe(*input) : std::string("missing")));
    max_time_ = time_major_ ? input->dim(0) : input->dim(1);
    n_batch_ = time_major_ ? input->dim(1) : input->dim(0);
    const rt::RtTensor* aux = ctx.input(kBidiAuxInput);
    if (aux && (aux->rank() != 3 || aux->dim(0) != input->dim(0) || aux->dim(1) != input->dim(1)))
      return ctx.Error("aux input " + Describe(*aux) + " must match the input's first two dimensions " +
                       Describe(*input));
    // Without aux weights, an aux input is the backward cell's input (stacking without cross links).
    const bool aux_weights = ctx.input(kFwCell.aux_w[lstm::kForgetGate]) != nullptr;
    bw_input_ = aux && !aux_weights ? kBidiAuxInput : kInput;
    aux_for_cells_ = aux && aux_weights ? aux : nullptr;
    rt::RtTensor* fw_out = ctx.output(0);
    rt::RtTensor* bw_out = merge_ ? fw_out : ctx.output(1);
    RETURN_IF_ERROR(fw_.Prepare(ctx, n_batch_, *input, aux_for_cells_, *fw_out));
    RETURN_IF_ERROR(bw_.Prepare(ctx, n_batch_, *ctx.input(bw_input_), aux_for_cells_, *bw_out));
    if (mode_ == Mode::kInt8) return ctx.UnsupportedError("integer bidirectional LSTM is not supported (as in TFLite 2.9)");
    if (fast_cpu_) {
      if (!(fw_.PrepareFast(ctx, *fast_cpu_, max_time_) && bw_.PrepareFast(ctx, *fast_cpu_, max_time_))) {
        fw_.DisableFast();
        bw_.DisableFast();
      }
    }
    rt::Shape shape = input->shape;
    shape.back() = merge_ ? fw_.n_output() + bw_.n_output() : fw_.n_output();
    RETURN_IF_ERROR(ctx.SetOutputShape(0, shape));
    if (!merge_) {
      shape.back() = bw_.n_output();
      RETURN_IF_ERROR(ctx.SetOutputShape(1, shape));
    }
    scratch_id_ = ctx.RequestScratch(std::max(fw_.ScratchBytes(), bw_.ScratchBytes()));
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    void* scratch = ctx.Scratch(scratch_id_);
    const rt::RtTensor* aux = aux_for_cells_ ? ctx.input(kBidiAuxInput) : nullptr;
    rt::RtTensor& fw_out = *ctx.output(0);
    rt::RtTensor& bw_out = merge_ ? fw_out : *ctx.output(1);
    const int fw_stride = merge_ ? fw_.n_output() + bw_.n_output() : fw_.n_output();
    const int bw_stride = merge_ ? fw_stride : bw_.n_output();
    RETURN_IF_ERROR(fw_.Run(ctx, scratch, *ctx.input(kInput), aux, fw_out, max_time_, time_major_, true, fw_stride, 0));
    return bw_.Run(ctx, scratch, *ctx.input(bw_input_), aux, bw_out, max_time_, time_major_, false, bw_stride,
                   merge_ ? fw_.n_output() : 0);
  }

 private:
  Mode mode_;
  bool time_major_, merge_;
  LstmCell fw_, bw_;
  std::optional<rt::CpuFeatures> fast_cpu_;
  int max_time_ = 0, n_batch_ = 0;
  int bw_input_ = kInput;
  const rt::RtTensor* aux_for_cells_ = nullptr;
  int scratch_id_ = -1;
};

// ---------------------------------------------------------------------------------------------
// Factories

Expected<Mode> ChooseMode(const rt::KernelCreateContext& cc, int output_weights_index) {
  const Tensor* input = cc.input(kInput);
  const Tensor* w = cc.input(output_weights_index);
  if (!input || !w)
    return cc.Error("input (0) and input-to-output weights (" + std::to_string(output_weights_index) + ") are required");
  if (input->type == DType::kFloat32 && w->type == DType::kFloat32) return Mode::kFloat;
  if (input->type == DType::kFloat32 && w->type == DType::kInt8) return Mode::kHybrid;
  if (input->type == DType::kInt8 && w->type == DType::kInt8) return Mode::kInt8;
  return cc.Error("input " + TypeName(input->type) + " with weights " + TypeName(w->type) +
                  " is not supported (float32/float32, float32/int8 hybrid, int8/int8)");
}

Expected<std::unique_ptr<rt::OpKernel>> CreateSequenceLstm(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(Mode mode, ChooseMode(cc, kUniCell.input_w[lstm::kOutputGate]));
  const auto& o = GetOptions<tflite::UnidirectionalSequenceLSTMOptionsT>(cc.op);
  if (o.diagonal_recurrent_tensors)
    return cc.Error("diagonal_recurrent_tensors (op version 4, newer than TFLite 2.9) is not supported");
  CellOptions opt{o.fused_activation_function, o.cell_clip, o.proj_clip, o.asymmetric_quantize_inputs};
  return std::unique_ptr<rt::OpKernel>(new LstmKernel(mode, /*sequence=*/true, o.time_major, kUniCell, opt,
                                                      FastCpu(cc, mode, {kUniCell})));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateLstm(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::LSTMOptionsT>(cc.op);
  if (o.kernel_type != tflite::LSTMKernelType_FULL)
    return cc.Error("only the FULL kernel type is supported (the BASIC 4-output kernel is not)");
  if (cc.num_outputs() != 1) return cc.Error("expects 1 output, has " + std::to_string(cc.num_outputs()));
  ASSIGN_OR_RETURN(Mode mode, ChooseMode(cc, kUniCell.input_w[lstm::kOutputGate]));
  CellOptions opt{o.fused_activation_function, o.cell_clip, o.proj_clip, o.asymmetric_quantize_inputs};
  return std::unique_ptr<rt::OpKernel>(new LstmKernel(mode, /*sequence=*/false, /*time_major=*/true, kUniCell, opt,
                                                      FastCpu(cc, mode, {kUniCell})));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateBidiLstm(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(Mode mode, ChooseMode(cc, kFwCell.input_w[lstm::kOutputGate]));
  if (mode == Mode::kInt8) return cc.Error("integer inputs are not supported (TFLite 2.9 has float and hybrid only)");
  const auto& o = GetOptions<tflite::BidirectionalSequenceLSTMOptionsT>(cc.op);
  CellOptions opt{o.fused_activation_function, o.cell_clip, o.proj_clip, o.asymmetric_quantize_inputs};
  return std::unique_ptr<rt::OpKernel>(new BidiLstmKernel(mode, o.time_major, o.merge_outputs, opt,
                                                          FastCpu(cc, mode, {kFwCell, kBwCell})));
}

}  // namespace

void RegisterRnnKernels(rt::OpRegistry& r);   // ref_rnn.cc
void RegisterSvdfKernels(rt::OpRegistry& r);  // ref_svdf.cc

void RegisterLstmKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM, CreateSequenceLstm);
  r.Add(tflite::BuiltinOperator_LSTM, CreateLstm);
  r.Add(tflite::BuiltinOperator_BIDIRECTIONAL_SEQUENCE_LSTM, CreateBidiLstm);
  RegisterRnnKernels(r);
  RegisterSvdfKernels(r);
}

}  // namespace edgeopt::kernels
