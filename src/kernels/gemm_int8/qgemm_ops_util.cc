#include "kernels/gemm_int8/qgemm_ops_util.h"

namespace edgeopt::kernels {

std::shared_ptr<const qgemm::PackedB> GetPackedWeights(rt::KernelContext& ctx, const std::string& tag,
                                                       const rt::RtTensor& weights, int N, int K,
                                                       const std::vector<int32_t>& zero_points) {
  auto make = [&]() -> std::shared_ptr<const void> {
    auto p = std::make_shared<qgemm::PackedB>();
    if (weights.type == DType::kUInt8) {
      qgemm::PackWeights(weights.data_as<uint8_t>(), N, K, zero_points, p.get());
    } else {
      qgemm::PackWeights(weights.data_as<int8_t>(), N, K, zero_points, p.get());
    }
    return p;
  };
  rt::PackedWeightCache* cache = ctx.host()->packed_cache();
  if (!cache) return std::static_pointer_cast<const qgemm::PackedB>(make());
  const std::string key = "qgemm-" + tag + "/sg" + std::to_string(ctx.host()->subgraph_index()) + "/op" +
                          std::to_string(ctx.op_index()) + "/" + std::to_string(N) + "x" + std::to_string(K);
  return std::static_pointer_cast<const qgemm::PackedB>(cache->GetOrCreate(key, make));
}

}  // namespace edgeopt::kernels
