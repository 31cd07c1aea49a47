// Opaque(v): v unchanged, but hidden from the optimizer, so that a product it holds is not fused
// with the addition that follows into one multiply-add (which rounds once instead of twice and
// differs from a reference that rounds the product and the sum apart).
//
// Internal linkage on purpose, as the vector row headers have it: the files that include this
// are compiled with different instruction sets, and each keeps its own copy.
#pragma once

namespace edgeopt::kernels {
namespace {

template <typename T>
inline T Opaque(T v) {
  asm("" : "+v"(v));
  return v;
}

}  // namespace
}  // namespace edgeopt::kernels
