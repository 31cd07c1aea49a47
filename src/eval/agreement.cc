#include "eval/agreement.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "eval/image.h"

namespace edgeopt::eval {

std::vector<double> RealValues(const rt::RtTensor& t) {
  const int64_t n = t.num_elements();
  std::vector<double> v(static_cast<size_t>(n), 0.0);
  if (!t.data) return v;
  const bool q = t.quant && !t.quant->scale.empty();
  const double scale = q ? t.scale() : 1.0, zp = q ? t.zero_point() : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double x = 0;
    switch (t.type) {
      case DType::kFloat32: x = t.data_as<float>()[i]; break;
      case DType::kFloat16: x = HalfToFloat(t.data_as<uint16_t>()[i]); break;
      case DType::kInt8: x = t.data_as<int8_t>()[i]; break;
      case DType::kUInt8: x = t.data_as<uint8_t>()[i]; break;
      case DType::kInt16: x = t.data_as<int16_t>()[i]; break;
      case DType::kInt32: x = t.data_as<int32_t>()[i]; break;
      case DType::kInt64: x = static_cast<double>(t.data_as<int64_t>()[i]); break;
      default: break;
    }
    v[static_cast<size_t>(i)] = q ? (x - zp) * scale : x;
  }
  return v;
}

namespace {

bool ClassifierShaped(const rt::Shape& s) {
  int non_unit = 0;
  int32_t classes = 0;
  for (int32_t d : s)
    if (d != 1) {
      ++non_unit;
      classes = d;
    }
  return non_unit == 1 && classes >= 2;
}

int64_t ArgMax(const std::vector<double>& v) {
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
  return best;
}

}  // namespace

Expected<AgreementReport> CompareModels(std::shared_ptr<const rt::Model> reference, std::shared_ptr<const rt::Model> candidate,
                                        const std::vector<std::vector<HostTensor>>& samples, int threads) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  ASSIGN_OR_RETURN(auto ref, rt::Interpreter::Create(reference, io));
  ASSIGN_OR_RETURN(auto cand, rt::Interpreter::Create(candidate, io));
  if (ref->num_inputs() != cand->num_inputs() || ref->num_outputs() != cand->num_outputs())
    return InvalidArgument("the models have different numbers of inputs or outputs");
  AgreementReport report;
  const int no = ref->num_outputs();
  std::vector<double> signal(no, 0.0), noise(no, 0.0);
  report.outputs.resize(no);
  for (const auto& sample : samples) {
    if (static_cast<int>(sample.size()) != ref->num_inputs())
      return InvalidArgument("a sample has " + std::to_string(sample.size()) + " inputs; the model has " +
                             std::to_string(ref->num_inputs()));
    for (size_t i = 0; i < sample.size(); ++i) {
      rt::RtTensor* a = ref->input(static_cast<int>(i));
      if (sample[i].data.size() != a->bytes || sample[i].type != a->type)
        return InvalidArgument("sample input " + std::to_string(i) + " does not match the model input " +
                               rt::ShapeToString(a->shape));
      std::memcpy(a->data, sample[i].data.data(), a->bytes);
      rt::RtTensor* b = cand->input(static_cast<int>(i));
      if (b->type == a->type) {
        std::memcpy(b->data, sample[i].data.data(), b->bytes);
      } else {
        const std::vector<float> real = sample[i].ToFloat();
        HostTensor conv = RealToTensor(real, b->shape, b->type, b->quant);
        if (conv.data.size() != b->bytes) return InvalidArgument("cannot convert a sample to the candidate's input");
        std::memcpy(b->data, conv.data.data(), b->bytes);
      }
    }
    ref->ResetVariables();
    cand->ResetVariables();
    RETURN_IF_ERROR_CTX(ref->Invoke(), "reference model");
    RETURN_IF_ERROR_CTX(cand->Invoke(), "transformed model");
    for (int k = 0; k < no; ++k) {
      const rt::RtTensor* a = ref->output(k);
      const rt::RtTensor* b = cand->output(k);
      const std::vector<double> va = RealValues(*a), vb = RealValues(*b);
      if (va.size() != vb.size()) return InvalidArgument("output " + std::to_string(k) + " sizes differ");
      OutputAgreement& o = report.outputs[k];
      o.name = a->name();
      o.classifier = ClassifierShaped(a->shape);
      for (size_t i = 0; i < va.size(); ++i) {
        signal[k] += va[i] * va[i];
        noise[k] += (va[i] - vb[i]) * (va[i] - vb[i]);
        o.max_abs_error = std::max(o.max_abs_error, std::fabs(va[i] - vb[i]));
      }
      if (o.classifier && ArgMax(va) == ArgMax(vb)) ++o.top1_agree;
      ++o.samples;
    }
    ++report.samples;
  }
  for (int k = 0; k < no; ++k) {
    OutputAgreement& o = report.outputs[k];
    o.snr_db = noise[k] > 0 ? 10.0 * std::log10(std::max(signal[k], 1e-30) / noise[k]) : std::numeric_limits<double>::infinity();
  }
  return report;
}

}  // namespace edgeopt::eval
