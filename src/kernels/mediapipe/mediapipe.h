// MediaPipe custom ops (ref.cc); the vector loop TransformTensorBilinear runs on AVX-512.
#pragma once

namespace edgeopt::kernels::mediapipe {

// One output pixel's channels from the four neighbours (p21, p12, p22 null past the last column
// or row: zeros), `right` and `lower_w` the fractions: the scalar loop's bits (ref.cc).
// AVX-512 only (transform_bilinear_avx512.cc).
void BilinearChannelsAvx512(const float* p11, const float* p21, const float* p12, const float* p22, float right,
                            float lower_w, int channels, float* out);

}  // namespace edgeopt::kernels::mediapipe
