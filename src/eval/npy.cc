#include "eval/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include "format/writer.h"

namespace edgeopt::eval {
namespace {

struct NpyType {
  const char* descr;
  DType type;
};
constexpr NpyType kTypes[] = {
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16}, {"|i1", DType::kInt8},
    {"|u1", DType::kUInt8},   {"<i2", DType::kInt16},   {"<u2", DType::kUInt16},  {"<i4", DType::kInt32},
    {"<u4", DType::kUInt32},  {"<i8", DType::kInt64},   {"<u8", DType::kUInt64},  {"|b1", DType::kBool},
    {"<c8", DType::kComplex64},
};

}  // namespace

Expected<HostTensor> ParseNpy(const uint8_t* data, size_t size, const std::string& label) {
  static const char kMagic[] = "\x93NUMPY";
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0) return InvalidArgument("'" + label + "' is not a .npy file");
  const int major = data[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = data[8] | (data[9] << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return InvalidArgument("'" + label + "': truncated .npy header");
    header_len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8) |
                 (static_cast<size_t>(data[10]) << 16) | (static_cast<size_t>(data[11]) << 24);
    offset = 12;
  } else {
    return InvalidArgument("'" + label + "': unsupported .npy version " + std::to_string(major));
  }
  if (header_len > size - offset) return InvalidArgument("'" + label + "': truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(data + offset), header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    return InvalidArgument("'" + label + "': .npy header without descr");
  std::string descr = m[1];
  if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  HostTensor t;
  bool known = false;
  for (const auto& k : kTypes)
    if (descr == k.descr) {
      t.type = k.type;
      known = true;
    }
  if (!known) return Unsupported("'" + label + "': .npy dtype '" + descr + "' is not supported (big-endian or object arrays?)");
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    return Unsupported("'" + label + "': Fortran-order .npy arrays are not supported; save with C order");
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    return InvalidArgument("'" + label + "': .npy header without shape");
  const std::string dims = m[1];
  static const std::regex kDigits("\\d+");
  std::sregex_iterator it(dims.begin(), dims.end(), kDigits), end;
  for (; it != end; ++it) {
    const long long d = std::stoll(it->str());
    if (d > (1ll << 31) - 1) return InvalidArgument("'" + label + "': .npy dimension too large");
    t.shape.push_back(static_cast<int32_t>(d));
  }
  const size_t bytes = DTypeBytes(t.type, static_cast<size_t>(t.num_elements()));
  const size_t start = offset + header_len;
  if (size - start < bytes)
    return InvalidArgument("'" + label + "': .npy data is truncated (" + std::to_string(size - start) + " of " +
                           std::to_string(bytes) + " bytes)");
  t.data.assign(data + start, data + start + bytes);
  return t;
}

Expected<HostTensor> ReadNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  return ParseNpy(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> EncodeNpy(const HostTensor& t) {
  const char* descr = "<f4";
  for (const auto& k : kTypes)
    if (k.type == t.type) descr = k.descr;
  std::string shape;
  for (size_t i = 0; i < t.shape.size(); ++i) shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 || i + 1 < t.shape.size() ? "," : "");
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<uint8_t> out(10 + header.size() + t.data.size());
  const uint8_t prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size() & 0xff),
                              static_cast<uint8_t>(header.size() >> 8)};
  std::memcpy(out.data(), prefix, 10);
  std::memcpy(out.data() + 10, header.data(), header.size());
  if (!t.data.empty()) std::memcpy(out.data() + 10 + header.size(), t.data.data(), t.data.size());
  return out;
}

Status WriteNpy(const std::string& path, const HostTensor& t) {
  auto bytes = EncodeNpy(t);
  return WriteFileAtomically(path, bytes.data(), bytes.size());
}

}  // namespace edgeopt::eval
