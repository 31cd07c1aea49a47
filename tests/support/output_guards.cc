#include "support/output_guards.h"

#include <string>

namespace edgeopt::testing {

Status OutputGuards::Bind(rt::Interpreter& interp) {
  buffers_.assign(static_cast<size_t>(interp.num_outputs()), {});
  for (int i = 0; i < interp.num_outputs(); ++i) {
    const rt::RtTensor* t = interp.output(i);
    if (t->type == DType::kString || !t->data || t->bytes == 0) continue;
    const size_t bytes = DTypeBytes(t->type, static_cast<size_t>(t->num_elements()));
    std::vector<uint8_t>& buf = buffers_[static_cast<size_t>(i)];
    buf.assign(bytes + kGuard, kGuardByte);
    if (!interp.BindOutput(i, buf.data(), bytes).ok()) buf.clear();
  }
  return interp.AllocateTensors();
}

Status OutputGuards::Check() const {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const std::vector<uint8_t>& buf = buffers_[i];
    if (buf.empty()) continue;
    for (size_t k = buf.size() - kGuard; k < buf.size(); ++k)
      if (buf[k] != kGuardByte)
        return Internal("output " + std::to_string(i) + ": a kernel wrote past its end (guard byte " +
                        std::to_string(k - (buf.size() - kGuard)) + ")");
  }
  return Status::Ok();
}

Status OutputGuards::Release(rt::Interpreter& interp) {
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (!buffers_[i].empty()) RETURN_IF_ERROR(interp.BindOutput(static_cast<int>(i), nullptr, 0));
  buffers_.clear();
  return Status::Ok();
}

}  // namespace edgeopt::testing
