#include <cstring>

#include "api/access.h"
#include "runtime/tensor.h"

namespace edgeopt {
namespace {

const std::vector<int32_t>& EmptyShape() {
  static const std::vector<int32_t> kEmpty;
  return kEmpty;
}

std::string Describe(const rt::RtTensor& t) {
  return "tensor '" + t.name() + "' " + rt::ShapeToString(t.shape) + " " + std::string(DTypeName(t.type));
}

}  // namespace

std::string_view TensorView::name() const { return t_ ? std::string_view(t_->name()) : std::string_view(); }
DType TensorView::type() const { return t_ ? t_->type : DType::kFloat32; }
const std::vector<int32_t>& TensorView::shape() const { return t_ ? t_->shape : EmptyShape(); }

int32_t TensorView::dim(int i) const {
  const int rank = num_dims();
  if (i < 0) i += rank;
  return i >= 0 && i < rank ? shape()[i] : 0;
}

int64_t TensorView::num_elements() const { return t_ ? t_->num_elements() : 0; }

size_t TensorView::bytes() const {
  if (!t_) return 0;
  // String tensors have no fixed element size: their byte count is whatever they hold.
  if (t_->type == DType::kString) return t_->bytes;
  return rt::TensorBytes(t_->type, t_->shape);
}

void* TensorView::data() const { return t_ ? t_->data : nullptr; }
bool TensorView::is_constant() const { return t_ && t_->is_constant(); }

float TensorView::scale() const { return t_ ? t_->scale() : 0.0f; }
int32_t TensorView::zero_point() const { return t_ ? t_->zero_point() : 0; }

std::span<const float> TensorView::scales() const {
  if (!t_ || !t_->quant) return {};
  return t_->quant->scale;
}

std::span<const int64_t> TensorView::zero_points() const {
  if (!t_ || !t_->quant) return {};
  return t_->quant->zero_point;
}

int32_t TensorView::quantized_dimension() const { return t_ && t_->quant ? t_->quant->quantized_dimension : 0; }

Status TensorView::CopyFrom(const void* src, size_t size) const {
  if (!t_) return InvalidArgument("CopyFrom: empty tensor view (the tensor was not found)");
  if (t_->is_constant()) return InvalidArgument("CopyFrom: " + Describe(*t_) + " is constant");
  if (t_->type == DType::kString) return Unsupported("CopyFrom: " + Describe(*t_) + ": string tensors cannot be copied into");
  const size_t need = bytes();
  if (size != need)
    return InvalidArgument("CopyFrom: " + Describe(*t_) + " holds " + std::to_string(need) + " bytes, given " +
                           std::to_string(size));
  if (need == 0) return Status::Ok();
  if (!src) return InvalidArgument("CopyFrom: null source buffer");
  if (!t_->data) return InvalidArgument("CopyFrom: " + Describe(*t_) + " has no storage yet (call AllocateTensors)");
  std::memmove(t_->data, src, need);
  return Status::Ok();
}

Status TensorView::CopyTo(void* dst, size_t size) const {
  if (!t_) return InvalidArgument("CopyTo: empty tensor view (the tensor was not found)");
  const size_t need = bytes();
  if (size != need)
    return InvalidArgument("CopyTo: " + Describe(*t_) + " holds " + std::to_string(need) + " bytes, the buffer has " +
                           std::to_string(size));
  if (need == 0) return Status::Ok();
  if (!dst) return InvalidArgument("CopyTo: null destination buffer");
  if (!t_->data) return InvalidArgument("CopyTo: " + Describe(*t_) + " has no data yet (call Invoke)");
  std::memmove(dst, t_->data, need);
  return Status::Ok();
}

}  // namespace edgeopt
