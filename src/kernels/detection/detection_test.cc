// TFLite_Detection_PostProcess against TFLite 2.9: float/uint8/int8 inputs, fast and regular
// NMS, background class or not, several classes per detection (int8, which 2.9 rejects, against
// 2.9 on the dequantized float twin), and the real op of
// ssd_mobilenet_v1_coco_quant.tflite with its own anchors. Rows TFLite leaves unwritten (past
// num_detections) hold stale arena bytes there, so only the rows it writes are compared.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <flatbuffers/flexbuffers.h>

#include "format/reader.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

using testing::TensorValue;

struct DetCase {
  int boxes = 20, classes = 5;
  bool background = true;
  int max_detections = 6, max_classes_per_detection = 1, detections_per_class = 4;
  bool regular = false;
  bool set_detections_per_class = true;
  float score_threshold = 0.3f, iou_threshold = 0.5f;
  DType type = DType::kFloat32;
  std::string Name() const {
    return std::string(DTypeName(type)) + (regular ? " regular" : " fast") + " boxes " + std::to_string(boxes) +
           " classes " + std::to_string(classes) + (background ? "+bg" : "") + " maxdet " +
           std::to_string(max_detections) + " per_det " + std::to_string(max_classes_per_detection);
  }
};

std::vector<uint8_t> Options(const DetCase& c) {
  flexbuffers::Builder fbb;
  fbb.Map([&]() {
    fbb.Int("max_detections", c.max_detections);
    fbb.Int("max_classes_per_detection", c.max_classes_per_detection);
    if (c.set_detections_per_class) fbb.Int("detections_per_class", c.detections_per_class);
    fbb.Bool("use_regular_nms", c.regular);
    fbb.Float("nms_score_threshold", c.score_threshold);
    fbb.Float("nms_iou_threshold", c.iou_threshold);
    fbb.Int("num_classes", c.classes);
    fbb.Float("y_scale", 10.0f);
    fbb.Float("x_scale", 10.0f);
    fbb.Float("h_scale", 5.0f);
    fbb.Float("w_scale", 5.0f);
  });
  fbb.Finish();
  return fbb.GetBuffer();
}

std::optional<QuantParams> QuantFor(DType t, float scale, int zp_uint8) {
  if (t == DType::kFloat32) return std::nullopt;
  return Quant(scale, t == DType::kUInt8 ? zp_uint8 : zp_uint8 - 128);
}

// Anchors on a grid (centers in [0,1], sizes 0.1..0.4) so that boxes overlap.
std::vector<float> Anchors(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> pos(0.05f, 0.95f), size(0.1f, 0.4f);
  std::vector<float> a(4 * n);
  for (int i = 0; i < n; ++i) {
    a[4 * i] = pos(rng);
    a[4 * i + 1] = pos(rng);
    a[4 * i + 2] = size(rng);
    a[4 * i + 3] = size(rng);
  }
  return a;
}

int32_t QuantizeValue(float v, const QuantParams& q, DType t) {
  const int32_t lo = t == DType::kUInt8 ? 0 : -128, hi = t == DType::kUInt8 ? 255 : 127;
  return std::clamp(static_cast<int32_t>(std::round(v / q.scale[0])) + static_cast<int32_t>(q.zero_point[0]), lo, hi);
}

std::vector<uint8_t> Encode(const std::vector<float>& v, DType t, const std::optional<QuantParams>& q) {
  std::vector<uint8_t> out;
  if (t == DType::kFloat32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    for (float x : v) out.push_back(static_cast<uint8_t>(QuantizeValue(x, *q, t)));
  }
  return out;
}

struct Built {
  Graph graph;
  std::vector<TensorValue> inputs;
};

Built BuildDetection(const DetCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  GraphBuilder b(seed);
  const int cols = c.classes + (c.background ? 1 : 0);
  const auto box_q = QuantFor(c.type, 0.08f, 128);
  const auto score_q = QuantFor(c.type, 1.0f / 256, 0);
  const auto anchor_q = QuantFor(c.type, 1.0f / 255, 0);
  auto boxes = b.Input("box_encodings", c.type, {1, c.boxes, 4}, box_q);
  auto scores = b.Input("class_scores", c.type, {1, c.boxes, cols}, score_q);
  auto anchors = b.ConstBytes("anchors", c.type, {c.boxes, 4}, Encode(Anchors(c.boxes, rng), c.type, anchor_q),
                              anchor_q);
  auto o0 = b.Tensor("detection_boxes", DType::kFloat32, {});
  auto o1 = b.Tensor("detection_classes", DType::kFloat32, {});
  auto o2 = b.Tensor("detection_scores", DType::kFloat32, {});
  auto o3 = b.Tensor("num_detections", DType::kFloat32, {});
  b.CustomOp("TFLite_Detection_PostProcess", {boxes, scores, anchors}, {o0, o1, o2, o3}, Options(c));
  for (auto t : {o0, o1, o2, o3}) b.Output(t);
  Built out;
  out.graph = b.Finish();
  // Encodings in about [-2, 2]; scores mostly low with a few strong (and tied) ones.
  std::uniform_real_distribution<float> enc(-2.0f, 2.0f), low(0.0f, 0.35f), high(0.35f, 1.0f), coin(0, 1);
  std::vector<float> e(4 * c.boxes), s(static_cast<size_t>(c.boxes) * cols);
  for (auto& x : e) x = enc(rng);
  for (auto& x : s) x = coin(rng) < 0.25f ? high(rng) : low(rng);
  if (c.boxes > 3) s[cols] = s[2 * cols] = 0.9f;  // a tie across anchors
  TensorValue tb, ts;
  tb.name = "box_encodings";
  tb.type = c.type;
  tb.shape = {1, c.boxes, 4};
  tb.data = Encode(e, c.type, box_q);
  ts.name = "class_scores";
  ts.type = c.type;
  ts.shape = {1, c.boxes, cols};
  ts.data = Encode(s, c.type, score_q);
  out.inputs = {tb, ts};
  return out;
}

// Compares the rows TFLite writes: the detections (boxes, classes, scores) and their count.
void ExpectSameDetections(const std::vector<TensorValue>& ours, const std::vector<TensorValue>& ref, int max_cls,
                          int per_anchor, bool regular, const std::string& what) {
  ASSERT_EQ(ours.size(), 4u) << what;
  ASSERT_EQ(ref.size(), 4u) << what;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(ours[i].shape, ref[i].shape) << what << " output " << i;
  const int n = static_cast<int>(ref[3].At(0));
  ASSERT_EQ(static_cast<int>(ours[3].At(0)), n) << what << ": num_detections";
  std::vector<int> rows;
  if (regular) {
    for (int r = 0; r < ref[1].shape[1] / max_cls; ++r) rows.push_back(r);  // max_detections rows, zero-filled past n
  } else {
    for (int k = 0; k < n; ++k)
      for (int col = 0; col < per_anchor; ++col) rows.push_back(max_cls * k + col);
  }
  for (int r : rows) {
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(ours[0].At(4 * r + j), ref[0].At(4 * r + j), 1e-6) << what << " box row " << r;
    EXPECT_EQ(ours[1].At(r), ref[1].At(r)) << what << " class row " << r;
    EXPECT_EQ(ours[2].At(r), ref[2].At(r)) << what << " score row " << r;
  }
}

// The float twin of an int8 model: TFLite 2.9 rejects int8 inputs for this op, so int8 is
// checked against 2.9 running on the values edgeopt dequantizes to (box/anchor values as
// (q - zp) * scale in float, scores as float(double(scale) * (q - zp)), as the kernel does).
Built FloatTwin(const Built& m) {
  Built f = m;
  Subgraph& sg = f.graph.main();
  const Operator& op = sg.ops[0];
  auto dequant = [](const std::vector<uint8_t>& bytes, const QuantParams& q, bool score) {
    std::vector<float> v;
    for (uint8_t b : bytes) {
      const int32_t x = static_cast<int8_t>(b);
      const int32_t zp = static_cast<int32_t>(q.zero_point[0]);
      v.push_back(score ? static_cast<float>(static_cast<double>(q.scale[0]) * (x - zp))
                        : (static_cast<float>(x) - static_cast<float>(zp)) * q.scale[0]);
    }
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  for (int i = 0; i < 3; ++i) {
    Tensor& t = sg.tensors[op.inputs[i]];
    const QuantParams q = *t.quant;
    if (i == 2) t.buffer = f.graph.AddBuffer(Buffer::Owned(dequant(std::vector<uint8_t>(f.graph.TensorData(t).begin(), f.graph.TensorData(t).end()), q, false)));
    else f.inputs[i].data = dequant(f.inputs[i].data, q, i == 1);
    t.type = DType::kFloat32;
    t.quant.reset();
    if (i < 2) f.inputs[i].type = DType::kFloat32;
  }
  return f;
}

void Check(const DetCase& c, uint64_t seed) {
  Built m = BuildDetection(c, seed);
  auto model = rt::Model::FromGraph(m.graph);
  ASSERT_TRUE(model.ok());
  auto ours = testing::RunEdgeopt(*model, m.inputs);
  ASSERT_TRUE(ours.ok()) << c.Name() << ": " << ours.status().ToString();
  if (c.type == DType::kInt8) m = FloatTwin(m);
  auto bytes = SerializeModel(m.graph);
  ASSERT_TRUE(bytes.ok());
  auto ref = testing::RunTflite29(*bytes, m.inputs);
  ASSERT_TRUE(ref.ok()) << c.Name() << ": " << ref.status().ToString();
  ExpectSameDetections(*ours, *ref, c.max_classes_per_detection, std::min(c.max_classes_per_detection, c.classes),
                       c.regular, c.Name() + " seed " + std::to_string(seed));
}

#define REQUIRE_TFLITE() \
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)"

TEST(DetectionConformance, GeneratedCases) {
  REQUIRE_TFLITE();
  std::vector<DetCase> cases;
  for (DType t : {DType::kFloat32, DType::kUInt8, DType::kInt8}) {
    for (bool regular : {false, true}) {
      DetCase c;
      c.type = t;
      c.regular = regular;
      cases.push_back(c);
      DetCase d = c;
      d.background = false;
      d.boxes = 37;
      d.classes = 3;
      d.max_detections = 10;
      cases.push_back(d);
      DetCase e = c;
      e.max_classes_per_detection = 3;
      e.iou_threshold = 0.3f;
      cases.push_back(e);
      DetCase f = c;
      f.boxes = 64;
      f.classes = 1;
      f.score_threshold = 0.0f;
      f.iou_threshold = 1.0f;
      f.set_detections_per_class = false;
      cases.push_back(f);
    }
  }
  for (const auto& c : cases)
    for (uint64_t seed : {1, 2})
      Check(c, seed);
}

// Keeps only the detection op of the SSD model (real anchors and options).
TEST(DetectionConformance, RealSsdMobilenetOp) {
  REQUIRE_TFLITE();
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string path = testing::SharedModel("ssd_mobilenet_v1_coco_quant.tflite");
  if (path.empty()) GTEST_SKIP() << "ssd_mobilenet_v1_coco_quant.tflite absent";
  auto g = ReadModelFile(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Subgraph& sg = g->main();
  int found = -1;
  for (size_t i = 0; i < sg.ops.size(); ++i)
    if (sg.ops[i].is_custom() && sg.ops[i].custom_code == "TFLite_Detection_PostProcess") found = static_cast<int>(i);
  ASSERT_GE(found, 0);
  Operator op = sg.ops[found];
  sg.ops = {op};
  sg.inputs = {op.inputs[0], op.inputs[1]};
  sg.outputs = op.outputs;
  g->signatures.clear();
  g->DropUnused();
  const Tensor& boxes = sg.tensors[sg.inputs[0]];
  const Tensor& scores = sg.tensors[sg.inputs[1]];
  // The model's own options (fast NMS), then the same with regular NMS (score threshold raised so
  // that per-class NMS over 1917 anchors x 90 classes stays quick).
  const std::vector<uint8_t> fast_options = sg.ops[0].custom_options;
  std::vector<uint8_t> regular_options;
  {
    const auto m = flexbuffers::GetRoot(fast_options.data(), fast_options.size()).AsMap();
    flexbuffers::Builder fbb;
    fbb.Map([&]() {
      for (const char* key : {"max_detections", "max_classes_per_detection", "num_classes"})
        fbb.Int(key, m[key].AsInt32());
      for (const char* key : {"nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale"})
        fbb.Float(key, m[key].AsFloat());
      fbb.Float("nms_score_threshold", 0.3f);
      fbb.Int("detections_per_class", 5);
      fbb.Bool("use_regular_nms", true);
    });
    fbb.Finish();
    regular_options = fbb.GetBuffer();
  }
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    const bool regular = trial == 3;
    sg.ops[0].custom_options = regular ? regular_options : fast_options;
    // Real-ish activations: encodings near the zero point, scores mostly background-low with
    // a few confident anchors/classes.
    TensorValue tb, ts;
    tb.name = boxes.name;
    tb.type = boxes.type;
    tb.shape = boxes.shape;
    ts.name = scores.name;
    ts.type = scores.type;
    ts.shape = scores.shape;
    std::normal_distribution<double> enc(boxes.quant->zero_point[0], 12.0);
    for (int64_t i = 0; i < boxes.num_elements(); ++i)
      tb.data.push_back(static_cast<uint8_t>(std::clamp(std::round(enc(rng)), 0.0, 255.0)));
    std::uniform_int_distribution<int> low(0, 40), high(60, 255);
    std::uniform_real_distribution<double> coin(0, 1);
    for (int64_t i = 0; i < scores.num_elements(); ++i)
      ts.data.push_back(static_cast<uint8_t>(coin(rng) < 0.002 ? high(rng) : low(rng)));
    std::vector<TensorValue> inputs = {tb, ts};
    auto model = rt::Model::FromGraph(*g);
    ASSERT_TRUE(model.ok());
    auto ours = testing::RunEdgeopt(*model, inputs);
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    auto bytes = SerializeModel(*g);
    ASSERT_TRUE(bytes.ok());
    auto ref = testing::RunTflite29(*bytes, inputs);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    ExpectSameDetections(*ours, *ref, 1, 1, regular, "ssd trial " + std::to_string(trial));
    EXPECT_GT((*ref)[3].At(0), 0) << "the inputs should produce detections";
  }
}

Status PrepareGraph(const Graph& g) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(g));
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
  return interp->AllocateTensors();
}

// A negative anchor height or width makes that box's decoded ymin > ymax (xmin > xmax): the op
// fails and names the first such box, though boxes are otherwise decoded only when NMS reaches
// them (box 9 is never a candidate here: its scores are all below the threshold). TFLite 2.9
// fails the op as well.
TEST(DetectionErrors, NegativeAnchorSizeFailsInvoke) {
  for (bool regular : {false, true}) {
    for (int field : {2, 3}) {
      DetCase c;
      c.regular = regular;
      Built m = BuildDetection(c, 1);
      Subgraph& sg = m.graph.main();
      Tensor& t = sg.tensors[sg.ops[0].inputs[2]];
      std::vector<uint8_t> bytes(m.graph.TensorData(t).begin(), m.graph.TensorData(t).end());
      for (int box : {9, 14}) {
        const float negative = -0.1f;
        std::memcpy(bytes.data() + (4 * box + field) * sizeof(float), &negative, sizeof(float));
      }
      t.buffer = m.graph.AddBuffer(Buffer::Owned(bytes));
      // Box 9's scores below the threshold: no NMS step decodes it.
      TensorValue& scores = m.inputs[1];
      for (int col = 0; col < scores.shape[2]; ++col) {
        const float low = 0.01f;
        std::memcpy(scores.data.data() + (9 * scores.shape[2] + col) * sizeof(float), &low, sizeof(float));
      }
      auto model = rt::Model::FromGraph(m.graph);
      ASSERT_TRUE(model.ok());
      auto ours = testing::RunEdgeopt(*model, m.inputs);
      ASSERT_FALSE(ours.ok()) << "anchor field " << field;
      EXPECT_NE(ours.status().message().find("decoded box 9 has min > max"), std::string::npos)
          << ours.status().ToString();
      if (testing::Tflite29Available()) {
        auto bytes29 = SerializeModel(m.graph);
        ASSERT_TRUE(bytes29.ok());
        EXPECT_FALSE(testing::RunTflite29(*bytes29, m.inputs).ok()) << "TFLite 2.9 ran anchor field " << field;
      }
    }
  }
}

TEST(DetectionErrors, BadOptionsAndShapes) {
  auto expect = [](Graph g, const std::string& text) {
    Status st = PrepareGraph(g);
    EXPECT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find("TFLite_Detection_PostProcess"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find(text), std::string::npos) << st.ToString();
  };
  {
    Graph g = BuildDetection({}, 1).graph;
    g.main().ops[0].custom_options = {1, 2, 3};
    expect(g, "not a valid flexbuffer");
  }
  {
    Graph g = BuildDetection({}, 1).graph;
    g.main().ops[0].custom_options.clear();
    expect(g, "needs flexbuffer custom options");
  }
  {
    DetCase c;
    c.iou_threshold = 1.5f;
    expect(BuildDetection(c, 1).graph, "nms_iou_threshold must be in (0, 1]");
  }
  {
    flexbuffers::Builder fbb;
    fbb.Map([&]() { fbb.Int("max_detections", 3); });
    fbb.Finish();
    Graph g = BuildDetection({}, 1).graph;
    g.main().ops[0].custom_options = fbb.GetBuffer();
    expect(g, "custom options lack max_classes_per_detection");
  }
  {
    Graph g = BuildDetection({}, 1).graph;
    g.main().tensors[g.main().ops[0].inputs[1]].shape = {1, 20, 9};
    expect(g, "class scores have 9 columns for num_classes 5");
  }
  {
    Graph g = BuildDetection({}, 1).graph;
    g.main().tensors[g.main().ops[0].inputs[2]].shape = {19, 4};
    expect(g, "anchors must be [20, 4]");
  }
}

}  // namespace
}  // namespace edgeopt
