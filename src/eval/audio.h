// WAV audio (PCM 8/16/24/32-bit integer or 32-bit float, any channel count) as float samples
// in [-1, 1], mixed down to mono: the input of audio models such as YAMNet.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace edgeopt::eval {

struct Audio {
  int sample_rate = 0;
  std::vector<float> samples;  // mono
};

Expected<Audio> LoadWav(const std::string& path);
bool IsAudioFile(const std::string& path);  // by extension (.wav)

}  // namespace edgeopt::eval
