// NumPy .npy files (format versions 1-3, little-endian, C order): read and write.
#pragma once

#include <string>

#include "core/status.h"
#include "eval/host_tensor.h"

namespace edgeopt::eval {

Expected<HostTensor> ReadNpy(const std::string& path);
Expected<HostTensor> ParseNpy(const uint8_t* data, size_t size, const std::string& label);
// Writes atomically. float16 is written as '<f2', bool as '|b1'.
Status WriteNpy(const std::string& path, const HostTensor& t);
std::vector<uint8_t> EncodeNpy(const HostTensor& t);

}  // namespace edgeopt::eval
