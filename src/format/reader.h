// Reads .tflite flatbuffers into the Graph IR.
//
// The bytes are untrusted: the flatbuffers Verifier runs before anything is touched, then
// ValidateModel checks what the Verifier cannot (indices in range, sane shapes, buffer sizes and
// offsets inside the file). Every failure is a Status naming the file and the offending element.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "format/mapped_file.h"
#include "graph/graph.h"

namespace edgeopt {

struct ReadOptions {
  // Largest accepted tensor element count and rank (guards against hostile shapes).
  int64_t max_tensor_elements = int64_t{1} << 34;
  int max_rank = 16;
};

// Maps and reads `path`. Constant buffers in the returned Graph are views into the mapping,
// which the Graph keeps alive (Graph::source).
Expected<Graph> ReadModelFile(const std::string& path, const ReadOptions& options = {});
// Reads a model from bytes in memory (copied).
Expected<Graph> ReadModelBytes(std::span<const uint8_t> bytes, const std::string& name = "<memory>",
                               const ReadOptions& options = {});
// Reads from an already mapped file.
Expected<Graph> ReadModel(std::shared_ptr<const MappedFile> file, const ReadOptions& options = {});

}  // namespace edgeopt
