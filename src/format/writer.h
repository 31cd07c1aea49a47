// Serializes the Graph IR to a .tflite flatbuffer that LiteRT loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt {

struct WriteOptions {
  // Constant data beyond this total goes after the flatbuffer (Buffer.offset/size), as LiteRT
  // does for models over 2 GB. Tests lower it to exercise that path.
  uint64_t external_buffers_threshold = (uint64_t{1} << 31) - (uint64_t{64} << 20);
};

// Returns the bytes of a .tflite file for `graph`. Constant buffers are 16-byte aligned.
Expected<std::vector<uint8_t>> SerializeModel(const Graph& graph, const WriteOptions& options = {});

// Writes atomically: to a temporary file beside `path`, then renamed over it. Refuses to write
// over the file the graph was read from (its constants are views into that mapping).
Status WriteModelFile(const Graph& graph, const std::string& path, const WriteOptions& options = {});

// Atomic write of arbitrary bytes (temporary file + fsync + rename); used by every file output.
Status WriteFileAtomically(const std::string& path, const void* data, size_t size);

}  // namespace edgeopt
