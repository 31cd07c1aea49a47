// Read-only bytes of a model: a memory-mapped file, or an owned in-memory copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace edgeopt {

class MappedFile {
 public:
  // Maps `path` read-only. Errors name the path: missing, a directory, empty, unreadable.
  static Expected<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  // Wraps bytes already in memory (copied, so the caller may free them).
  static std::shared_ptr<const MappedFile> FromBytes(std::span<const uint8_t> bytes, std::string name = "<memory>");

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  bool is_mapped() const { return mapped_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string path_;
  std::vector<uint8_t> owned_;
};

}  // namespace edgeopt
