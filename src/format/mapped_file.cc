#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace edgeopt {

Expected<std::shared_ptr<const MappedFile>> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; it has no
  // effect on regular files, and anything else is rejected below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound("'" + path + "': no such file");
    return IoError("cannot open '" + path + "': " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError("cannot stat '" + path + "': " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'" + path + "' is a directory, not a model file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return InvalidModel("'" + path + "' is empty (0 bytes)");
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return IoError("cannot map '" + path + "': " + std::strerror(err));
  auto f = std::shared_ptr<MappedFile>(new MappedFile());
  f->data_ = static_cast<const uint8_t*>(p);
  f->size_ = size;
  f->mapped_ = true;
  f->path_ = path;
  return std::shared_ptr<const MappedFile>(std::move(f));
}

std::shared_ptr<const MappedFile> MappedFile::FromBytes(std::span<const uint8_t> bytes, std::string name) {
  auto f = std::shared_ptr<MappedFile>(new MappedFile());
  // Over-align the copy so buffer views keep the 16-byte alignment the writer guarantees.
  f->owned_.reserve(bytes.size() + 64);
  f->owned_.assign(bytes.begin(), bytes.end());
  f->data_ = f->owned_.data();
  f->size_ = f->owned_.size();
  f->path_ = std::move(name);
  return f;
}

MappedFile::~MappedFile() {
  if (mapped_ && data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace edgeopt
