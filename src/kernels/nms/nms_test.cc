// NON_MAX_SUPPRESSION_V4 / V5 against TFLite 2.9 (which has both, float32 only): random boxes
// with either corner first, scores drawn from a few values (many ties, so the heap order
// matters), thresholds that keep all / some / none, max_output_size constant or a graph input,
// soft-NMS sigmas, degenerate boxes, empty inputs; and bad inputs giving errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::CaseRng;
using testing::ExpectConforms;
using testing::MakeValue;

struct NmsCase {
  int boxes = 10;
  int max_out = 5;
  bool max_out_input = false;  // max_output_size a graph input (outputs sized at invoke)
  float iou = 0.5f;
  float score_threshold = 0.0f;
  float sigma = -1.0f;  // < 0: V4 (5 inputs); else V5 with this sigma
  bool thresholds_input = false;
  bool degenerate = false;  // some boxes of zero width or height
  int score_levels = 4;     // scores drawn from this many values (ties)
  bool gather = false;      // GATHER(boxes, selected) after the NMS

  std::string Name() const {
    return std::string(sigma < 0 ? "V4" : "V5 sigma " + std::to_string(sigma)) + " n " + std::to_string(boxes) +
           " max " + std::to_string(max_out) + (max_out_input ? " (input)" : "") + " iou " + std::to_string(iou) +
           " score_thr " + std::to_string(score_threshold) + (degenerate ? " degenerate" : "") + " levels " +
           std::to_string(score_levels);
  }
};

struct Built {
  Graph graph;
  std::vector<testing::TensorValue> inputs;
};

Built Build(const NmsCase& c, uint64_t seed) {
  CaseRng rng(seed);
  std::vector<float> boxes(4 * static_cast<size_t>(c.boxes)), scores(static_cast<size_t>(c.boxes));
  for (int i = 0; i < c.boxes; ++i) {
    // Clustered centres so that many boxes overlap.
    const float cy = rng.Float(0.f, 1.f), cx = rng.Float(0.f, 1.f);
    float h = rng.Float(0.05f, 0.5f), w = rng.Float(0.05f, 0.5f);
    if (c.degenerate && rng.Int(0, 3) == 0) (rng.Bool() ? h : w) = 0.f;
    float y1 = cy - h / 2, y2 = cy + h / 2, x1 = cx - w / 2, x2 = cx + w / 2;
    if (rng.Bool()) std::swap(y1, y2);  // corners in either order
    if (rng.Bool()) std::swap(x1, x2);
    boxes[4 * i + 0] = y1;
    boxes[4 * i + 1] = x1;
    boxes[4 * i + 2] = y2;
    boxes[4 * i + 3] = x2;
    scores[i] = static_cast<float>(rng.Int(1, c.score_levels)) / static_cast<float>(c.score_levels) -
                (c.score_levels > 100 ? rng.Float(0.f, 1e-3f) : 0.f);
  }
  GraphBuilder b;
  std::vector<testing::TensorValue> in;
  std::vector<int32_t> ops_in;
  ops_in.push_back(b.Input("boxes", DType::kFloat32, {c.boxes, 4}));
  in.push_back(MakeValue<float>("boxes", DType::kFloat32, {c.boxes, 4}, boxes));
  ops_in.push_back(b.Input("scores", DType::kFloat32, {c.boxes}));
  in.push_back(MakeValue<float>("scores", DType::kFloat32, {c.boxes}, scores));
  if (c.max_out_input) {
    ops_in.push_back(b.Input("max_out", DType::kInt32, {}));
    in.push_back(MakeValue<int32_t>("max_out", DType::kInt32, {}, {c.max_out}));
  } else {
    ops_in.push_back(b.Const<int32_t>("max_out", DType::kInt32, {}, {c.max_out}));
  }
  std::vector<float> scalars = {c.iou, c.score_threshold};
  if (c.sigma >= 0) scalars.push_back(c.sigma);
  const char* names[] = {"iou", "score_thr", "sigma"};
  for (size_t i = 0; i < scalars.size(); ++i) {
    if (c.thresholds_input) {
      ops_in.push_back(b.Input(names[i], DType::kFloat32, {}));
      in.push_back(MakeValue<float>(names[i], DType::kFloat32, {}, {scalars[i]}));
    } else {
      ops_in.push_back(b.Const<float>(names[i], DType::kFloat32, {}, {scalars[i]}));
    }
  }
  std::vector<int32_t> outs;
  outs.push_back(b.Tensor("selected", DType::kInt32, {c.max_out}));
  if (c.sigma >= 0) outs.push_back(b.Tensor("selected_scores", DType::kFloat32, {c.max_out}));
  outs.push_back(b.Tensor("valid", DType::kInt32, {}));
  b.Op(c.sigma < 0 ? tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V4 : tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V5,
       ops_in, outs);
  for (int32_t o : outs) b.Output(o);
  if (c.gather) {
    auto g = b.Tensor("gathered", DType::kFloat32, {c.max_out, 4});
    b.Op(tflite::BuiltinOperator_GATHER, {ops_in[0], outs[0]}, {g}, tflite::GatherOptionsT{});
    b.Output(g);
  }
  return {b.Finish(), std::move(in)};
}

void Check(const NmsCase& c, uint64_t seed) {
  Built m = Build(c, seed);
  ExpectConforms(m.graph, c.Name() + " seed " + std::to_string(seed), testing::ExactOptions(), m.inputs);
}

TEST(NmsConformance, HardNmsGenerated) {
  SKIP_WITHOUT_ORACLE();
  uint64_t seed = 1;
  for (int n : {1, 2, 7, 25, 80})
    for (int max_out : {0, 1, 4, 100})
      for (float iou : {0.0f, 0.3f, 0.5f, 1.0f})
        for (int levels : {3, 1000}) {
          NmsCase c;
          c.boxes = n;
          c.max_out = max_out;
          c.iou = iou;
          c.score_levels = levels;
          c.score_threshold = (seed % 3 == 0) ? 0.5f : (seed % 3 == 1 ? 0.0f : -std::numeric_limits<float>::infinity());
          Check(c, seed++);
        }
}

TEST(NmsConformance, SoftNmsGenerated) {
  SKIP_WITHOUT_ORACLE();
  uint64_t seed = 100;
  for (int n : {1, 6, 30, 90})
    for (int max_out : {0, 3, 12, 120})
      for (float sigma : {0.0f, 0.1f, 0.5f, 2.0f})
        for (float iou : {0.4f, 1.0f}) {
          NmsCase c;
          c.boxes = n;
          c.max_out = max_out;
          c.sigma = sigma;
          c.iou = iou;
          c.score_levels = (seed % 2) ? 5 : 1000;
          c.score_threshold = (seed % 3 == 0) ? 0.3f : 0.0f;
          Check(c, seed++);
        }
}

// max_output_size and the thresholds as graph inputs: the output length is known at invoke.
TEST(NmsConformance, RuntimeArguments) {
  SKIP_WITHOUT_ORACLE();
  uint64_t seed = 500;
  for (float sigma : {-1.0f, 0.0f, 0.6f})
    for (int max_out : {0, 2, 9, 40}) {
      NmsCase c;
      c.boxes = 20;
      c.max_out = max_out;
      c.max_out_input = true;
      c.thresholds_input = seed % 2 == 0;
      c.sigma = sigma;
      c.iou = 0.45f;
      c.score_threshold = 0.2f;
      Check(c, seed++);
    }
}

// Zero-area boxes have IoU 0 with everything: TFLite re-selects a box that is pushed back into
// the heap after its selection; with iou_threshold > 1 every box comes back too.
TEST(NmsConformance, DegenerateBoxesAndEdgeThresholds) {
  SKIP_WITHOUT_ORACLE();
  uint64_t seed = 700;
  for (float sigma : {-1.0f, 0.0f, 0.5f})
    for (float iou : {0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()})
      for (float thr : {0.0f, 0.99f, 2.0f}) {
        NmsCase c;
        c.boxes = 12;
        c.max_out = 10;
        c.sigma = sigma;
        c.iou = iou;
        c.score_threshold = thr;
        c.degenerate = true;
        Check(c, seed++);
      }
}

TEST(NmsConformance, NoBoxes) {
  SKIP_WITHOUT_ORACLE();
  for (float sigma : {-1.0f, 0.5f}) {
    NmsCase c;
    c.boxes = 0;
    c.max_out = 3;
    c.sigma = sigma;
    Check(c, 1);
  }
}

// Values known only at run time chained through NMS into GATHER (a detection-head pattern).
TEST(NmsConformance, FeedsGather) {
  SKIP_WITHOUT_ORACLE();
  for (int max_out : {3, 8}) {
    NmsCase c;
    c.boxes = 40;
    c.max_out = max_out;
    c.max_out_input = true;
    c.gather = true;
    Check(c, 9 + max_out);
  }
}

TEST(NmsErrors, BadInputsGiveErrors) {
  {  // boxes [N, 3]
    GraphBuilder b;
    auto boxes = b.Input("boxes", DType::kFloat32, {5, 3});
    auto scores = b.Input("scores", DType::kFloat32, {5});
    auto m = b.Const<int32_t>("m", DType::kInt32, {}, {2});
    auto iou = b.Const<float>("iou", DType::kFloat32, {}, {0.5f});
    auto thr = b.Const<float>("thr", DType::kFloat32, {}, {0.f});
    auto sel = b.Tensor("sel", DType::kInt32, {2});
    auto valid = b.Tensor("valid", DType::kInt32, {});
    b.Op(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V4, {boxes, scores, m, iou, thr}, {sel, valid});
    b.Output(sel);
    b.Output(valid);
    const Status s = testing::RunOurs(b.Finish());
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("boxes"), std::string::npos) << s.ToString();
  }
  {  // scores of another length
    GraphBuilder b;
    auto boxes = b.Input("boxes", DType::kFloat32, {5, 4});
    auto scores = b.Input("scores", DType::kFloat32, {4});
    auto m = b.Const<int32_t>("m", DType::kInt32, {}, {2});
    auto iou = b.Const<float>("iou", DType::kFloat32, {}, {0.5f});
    auto thr = b.Const<float>("thr", DType::kFloat32, {}, {0.f});
    auto sel = b.Tensor("sel", DType::kInt32, {2});
    auto valid = b.Tensor("valid", DType::kInt32, {});
    b.Op(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V4, {boxes, scores, m, iou, thr}, {sel, valid});
    b.Output(sel);
    b.Output(valid);
    const Status s = testing::RunOurs(b.Finish());
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("scores"), std::string::npos) << s.ToString();
  }
  for (bool runtime : {false, true}) {  // negative max_output_size, constant or at run time
    GraphBuilder b;
    auto boxes = b.Input("boxes", DType::kFloat32, {5, 4});
    auto scores = b.Input("scores", DType::kFloat32, {5});
    auto m = runtime ? b.Input("m", DType::kInt32, {}) : b.Const<int32_t>("m", DType::kInt32, {}, {-1});
    auto iou = b.Const<float>("iou", DType::kFloat32, {}, {0.5f});
    auto thr = b.Const<float>("thr", DType::kFloat32, {}, {0.f});
    auto sel = b.Tensor("sel", DType::kInt32, {1});
    auto valid = b.Tensor("valid", DType::kInt32, {});
    b.Op(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V4, {boxes, scores, m, iou, thr}, {sel, valid});
    b.Output(sel);
    b.Output(valid);
    Graph g = b.Finish();
    auto inputs = testing::RandomInputs(g, testing::ExactOptions());
    if (runtime) inputs[2] = MakeValue<int32_t>("m", DType::kInt32, {}, {-3});
    const Status s = testing::RunOurs(g, inputs);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("max_output_size"), std::string::npos) << s.ToString();
  }
  {  // negative soft_nms_sigma (TFLite fails the invoke too)
    GraphBuilder b;
    auto boxes = b.Input("boxes", DType::kFloat32, {5, 4});
    auto scores = b.Input("scores", DType::kFloat32, {5});
    auto m = b.Const<int32_t>("m", DType::kInt32, {}, {2});
    auto iou = b.Const<float>("iou", DType::kFloat32, {}, {0.5f});
    auto thr = b.Const<float>("thr", DType::kFloat32, {}, {0.f});
    auto sigma = b.Const<float>("sigma", DType::kFloat32, {}, {-0.5f});
    auto sel = b.Tensor("sel", DType::kInt32, {2});
    auto sc = b.Tensor("sc", DType::kFloat32, {2});
    auto valid = b.Tensor("valid", DType::kInt32, {});
    b.Op(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V5, {boxes, scores, m, iou, thr, sigma}, {sel, sc, valid});
    b.Output(sel);
    b.Output(sc);
    b.Output(valid);
    const Status s = testing::RunOurs(b.Finish());
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("soft_nms_sigma"), std::string::npos) << s.ToString();
  }
  {  // int8 boxes: unsupported (TFLite 2.9 has float32 only)
    GraphBuilder b;
    auto boxes = b.Input("boxes", DType::kInt8, {5, 4}, Quant(0.1f, 0));
    auto scores = b.Input("scores", DType::kInt8, {5}, Quant(0.1f, 0));
    auto m = b.Const<int32_t>("m", DType::kInt32, {}, {2});
    auto iou = b.Const<float>("iou", DType::kFloat32, {}, {0.5f});
    auto thr = b.Const<float>("thr", DType::kFloat32, {}, {0.f});
    auto sel = b.Tensor("sel", DType::kInt32, {2});
    auto valid = b.Tensor("valid", DType::kInt32, {});
    b.Op(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V4, {boxes, scores, m, iou, thr}, {sel, valid});
    b.Output(sel);
    b.Output(valid);
    const Status s = testing::RunOurs(b.Finish());
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("int8"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace edgeopt
