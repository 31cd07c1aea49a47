// Registration of the fusion matchers (see fused.h).
#include "kernels/fused/fused.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterFusions(rt::OpRegistry& r) {
  r.AddFusion(fused::MatchDwChainF32);  // first: a chain's 1x1 convs keep their own activations
  r.AddFusion(fused::MatchDwChainInt8);
  r.AddFusion(fused::MatchActivationIntoProducer);
  r.AddFusion(fused::MatchConcatPointwiseF32);
  r.AddFusion(fused::MatchSilu);
  r.AddFusion(fused::MatchPadIntoConv);
  r.AddFusion(fused::MatchChannelPadAddF32);
  r.AddFusion(fused::MatchAddPreluF32);
  r.AddFusion(fused::MatchQuantizeIntoConv);
}

}  // namespace edgeopt::kernels
