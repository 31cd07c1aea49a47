// Status: OK holds nothing, errors carry code and message through copies, moves and context.
#include "core/status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace edgeopt {
namespace {

TEST(StatusTest, OkHoldsNoMessage) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
  // An OK code makes an OK status whatever the message.
  const Status ok_with_text(StatusCode::kOk, "ignored");
  EXPECT_TRUE(ok_with_text.ok());
  EXPECT_EQ(ok_with_text.message(), "");
  EXPECT_TRUE(ok.WithContext("op 3").ok());
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  const Status e = InvalidModel("tensor 'x' has a bad shape");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_EQ(e.message(), "tensor 'x' has a bad shape");
  EXPECT_EQ(e.ToString(), "invalid model: tensor 'x' has a bad shape");
  const Status c = e.WithContext("model.tflite");
  EXPECT_EQ(c.code(), StatusCode::kInvalidModel);
  EXPECT_EQ(c.message(), "model.tflite: tensor 'x' has a bad shape");
  EXPECT_EQ(e.message(), "tensor 'x' has a bad shape");  // the original is unchanged
  // An empty message is still an error.
  const Status empty(StatusCode::kInternal, "");
  EXPECT_FALSE(empty.ok());
  EXPECT_EQ(empty.code(), StatusCode::kInternal);
}

TEST(StatusTest, CopiesAreIndependentAndMovesTransfer) {
  Status a = NotFound("no file 'a.tflite'");
  Status b = a;  // copy
  EXPECT_EQ(b.code(), StatusCode::kNotFound);
  EXPECT_EQ(b.message(), a.message());
  b = Unsupported("op FOO");  // assigning to the copy leaves the original
  EXPECT_EQ(a.code(), StatusCode::kNotFound);
  EXPECT_EQ(a.message(), "no file 'a.tflite'");
  b = a;  // copy assignment over an error
  EXPECT_EQ(b.message(), "no file 'a.tflite'");
  const Status& same = b;
  b = same;  // self-assignment keeps it
  EXPECT_EQ(b.message(), "no file 'a.tflite'");
  Status ok;
  b = ok;  // copy of an OK status
  EXPECT_TRUE(b.ok());

  Status moved = std::move(a);
  EXPECT_EQ(moved.code(), StatusCode::kNotFound);
  EXPECT_EQ(moved.message(), "no file 'a.tflite'");
  Status target = Internal("old");
  target = std::move(moved);
  EXPECT_EQ(target.message(), "no file 'a.tflite'");
  target = Status::Ok();
  EXPECT_TRUE(target.ok());
}

TEST(StatusTest, ExpectedKeepsTheError) {
  Expected<int> v = 7;
  EXPECT_TRUE(v.ok());
  EXPECT_TRUE(v.status().ok());
  Expected<int> e = IoError("cannot write 'out.tflite'");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kIoError);
  const Expected<int> copy = e;
  EXPECT_EQ(copy.status().message(), "cannot write 'out.tflite'");
}

}  // namespace
}  // namespace edgeopt
