// <immintrin.h> for AVX-512 sources. GCC 12's AVX-512 headers start unmasked intrinsics from a
// self-initialized "undefined" vector, which -Wuninitialized reports once inlined (GCC bug
// 105593, fixed in GCC 13): the warnings are silenced for the header only, not for the file
// that includes it.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
