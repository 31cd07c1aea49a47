// Helpers shared by the elementwise, activation and conversion kernel families: broadcasting
// plans computed once in Prepare, loops over them, and input checks with clear messages.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/broadcast.h"
#include "kernels/common/kernel_util.h"
#include "runtime/tensor.h"

namespace edgeopt::kernels {

// Where each output element of a two-input broadcast reads its inputs; built in Prepare.
struct BroadcastPlan {
  rt::Shape out;
  std::vector<int64_t> sa, sb;
  bool same_shape = true;  // inputs have identical shapes: a flat loop
};

// Fills `plan` for inputs of shapes a and b; false if they do not broadcast.
inline bool MakeBroadcastPlan(const rt::Shape& a, const rt::Shape& b, BroadcastPlan* plan) {
  plan->same_shape = a == b;
  if (plan->same_shape) {
    plan->out = a;
    plan->sa.clear();
    plan->sb.clear();
    return true;
  }
  if (!BroadcastShape(a, b, &plan->out)) return false;
  plan->sa = BroadcastStrides(a, plan->out);
  plan->sb = BroadcastStrides(b, plan->out);
  return true;
}

// out[i] = f(a[ia], b[ib]) over the broadcast output. No allocation for ranks up to 8 (the
// output is walked as runs along its innermost dimension).
template <typename TA, typename TB, typename TO, typename F>
void BroadcastBinary(const BroadcastPlan& p, const TA* a, const TB* b, TO* out, F&& f) {
  if (p.same_shape) {
    const int64_t n = rt::NumElements(p.out);
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  auto run = [&](int64_t o, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs) {
    for (int64_t i = 0; i < n; ++i) out[o + i] = f(a[ao + i * as], b[bo + i * bs]);
  };
  const int rank = static_cast<int>(p.out.size());
  constexpr int kMaxRank = 8;
  if (rank > kMaxRank) return ForEachBroadcastRun(p.out, p.sa, p.sb, run);
  const int64_t total = rt::NumElements(p.out);
  if (total == 0) return;
  if (rank == 0) return run(0, 0, 0, 1, 0, 0);
  const int64_t inner = p.out[rank - 1];
  std::array<int32_t, kMaxRank> idx{};
  int64_t ao = 0, bo = 0;
  for (int64_t o = 0; o < total; o += inner) {
    run(o, ao, bo, inner, p.sa[rank - 1], p.sb[rank - 1]);
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      ao += p.sa[d];
      bo += p.sb[d];
      if (idx[d] < p.out[d]) break;
      ao -= p.sa[d] * p.out[d];
      bo -= p.sb[d] * p.out[d];
      idx[d] = 0;
    }
  }
}

// "float32, int32 and uint8" for messages.
inline std::string TypeListText(const std::vector<DType>& types) {
  std::string s;
  size_t i = 0;
  for (DType t : types) {
    if (i) s += i + 1 == types.size() ? " and " : ", ";
    s += TypeName(t);
    ++i;
  }
  return s;
}

inline bool TypeIn(DType t, const std::vector<DType>& types) {
  for (DType u : types)
    if (u == t) return true;
  return false;
}

// Error unless the quantized tensor has per-tensor quantization parameters.
inline Status RequirePerTensorQuant(const rt::KernelContext& ctx, const rt::RtTensor& t, const char* what) {
  if (!t.quant || t.quant->scale.empty())
    return ctx.Error(std::string(what) + " " + Describe(t) + " has no quantization parameters");
  if (!(t.scale() > 0.0f) || !std::isfinite(t.scale()))
    return ctx.Error(std::string(what) + " " + Describe(t) + " has a non-positive scale");
  return Status::Ok();
}

// Error unless the zero point is in the integer type's range.
inline Status RequireZeroPointInRange(const rt::KernelContext& ctx, const rt::RtTensor& t, const char* what) {
  int64_t lo = 0, hi = 0;
  switch (t.type) {
    case DType::kInt8: lo = -128; hi = 127; break;
    case DType::kUInt8: lo = 0; hi = 255; break;
    case DType::kInt16: lo = -32768; hi = 32767; break;
    default: return Status::Ok();
  }
  const int64_t zp = t.zero_point();
  if (zp < lo || zp > hi)
    return ctx.Error(std::string(what) + " zero point " + std::to_string(zp) + " is out of range for " + TypeName(t.type));
  return Status::Ok();
}

}  // namespace edgeopt::kernels
