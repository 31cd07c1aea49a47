#include "optimize/compression.h"

#include <zlib.h>
#include <zstd.h>

#include <vector>

namespace edgeopt::optimize {

CompressedSizes MeasureCompression(std::span<const uint8_t> bytes) {
  CompressedSizes s;
  s.raw = bytes.size();
  z_stream zs{};
  // windowBits 15 + 16: gzip wrapper, as the gzip tool writes.
  if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK) {
    std::vector<uint8_t> out(deflateBound(&zs, bytes.size()) + 64);
    zs.next_in = const_cast<Bytef*>(bytes.data());
    zs.avail_in = static_cast<uInt>(bytes.size());
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    if (deflate(&zs, Z_FINISH) == Z_STREAM_END) s.gzip = zs.total_out;
    deflateEnd(&zs);
  }
  std::vector<uint8_t> out(ZSTD_compressBound(bytes.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 19);
  if (!ZSTD_isError(n)) s.zstd = n;
  return s;
}

}  // namespace edgeopt::optimize
