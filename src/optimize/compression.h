// File-size figures that show what an optimization really buys: raw, gzip -9 and zstd -19.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace edgeopt::optimize {

struct CompressedSizes {
  size_t raw = 0;
  size_t gzip = 0;  // zlib deflate level 9 with a gzip header (as `gzip -9`)
  size_t zstd = 0;  // zstd level 19
};

CompressedSizes MeasureCompression(std::span<const uint8_t> bytes);

}  // namespace edgeopt::optimize
