#include "eval/audio.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace edgeopt::eval {

bool IsAudioFile(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == ".wav";
}

Expected<Audio> LoadWav(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open audio file '" + path + "'");
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), {});
  auto u32 = [&](size_t o) { return static_cast<uint32_t>(b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)); };
  auto u16 = [&](size_t o) { return static_cast<uint16_t>(b[o] | (b[o + 1] << 8)); };
  if (b.size() < 12 || std::memcmp(b.data(), "RIFF", 4) != 0 || std::memcmp(b.data() + 8, "WAVE", 4) != 0)
    return InvalidArgument("'" + path + "' is not a RIFF/WAVE file");
  int format = 0, channels = 0, bits = 0;
  Audio a;
  size_t pos = 12;
  const uint8_t* data = nullptr;
  size_t data_size = 0;
  while (pos + 8 <= b.size()) {
    const uint32_t size = u32(pos + 4);
    const size_t body = pos + 8;
    if (size > b.size() - body) return InvalidArgument("'" + path + "': truncated WAV chunk");
    if (std::memcmp(b.data() + pos, "fmt ", 4) == 0 && size >= 16) {
      format = u16(body);
      channels = u16(body + 2);
      a.sample_rate = static_cast<int>(u32(body + 4));
      bits = u16(body + 14);
      if (format == 0xFFFE && size >= 26) format = u16(body + 24);  // WAVE_FORMAT_EXTENSIBLE sub-format
    } else if (std::memcmp(b.data() + pos, "data", 4) == 0) {
      data = b.data() + body;
      data_size = size;
    }
    pos = body + size + (size & 1);
  }
  if (!data || channels <= 0) return InvalidArgument("'" + path + "': WAV file without fmt or data chunk");
  const bool is_float = format == 3;
  if (!(format == 1 || is_float) || !(bits == 8 || bits == 16 || bits == 24 || bits == 32) || (is_float && bits != 32))
    return Unsupported("'" + path + "': only PCM integer or 32-bit float WAV is supported (format " + std::to_string(format) +
                       ", " + std::to_string(bits) + " bits)");
  const size_t bytes = bits / 8;
  const size_t frames = data_size / (bytes * channels);
  a.samples.resize(frames);
  for (size_t i = 0; i < frames; ++i) {
    double sum = 0;
    for (int c = 0; c < channels; ++c) {
      const uint8_t* p = data + (i * channels + c) * bytes;
      double v = 0;
      if (is_float) {
        float x;
        std::memcpy(&x, p, 4);
        v = x;
      } else if (bits == 8) {
        v = (p[0] - 128) / 128.0;
      } else if (bits == 16) {
        v = static_cast<int16_t>(p[0] | (p[1] << 8)) / 32768.0;
      } else if (bits == 24) {
        int32_t x = p[0] | (p[1] << 8) | (p[2] << 16);
        if (x & 0x800000) x |= ~0xFFFFFF;
        v = x / 8388608.0;
      } else {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = x / 2147483648.0;
      }
      sum += v;
    }
    a.samples[i] = static_cast<float>(sum / channels);
  }
  return a;
}

}  // namespace edgeopt::eval
