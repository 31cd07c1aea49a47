// edgeopt command line: help, version, unknown commands and flags (exit code 2 for usage errors).
#include <gtest/gtest.h>

#include "cli/cli_test_util.h"

namespace edgeopt::testing {
namespace {

TEST(CliUsage, HelpListsCommandsWithExamples) {
  CliResult r = RunEdgeopt({"--help"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("inspect"), std::string::npos);
  EXPECT_NE(r.out.find("convert"), std::string::npos);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliUsage, EachCommandHasHelpWithExamples) {
  for (const char* cmd : {"inspect", "convert", "prune", "cluster"}) {
    SCOPED_TRACE(cmd);
    CliResult r = RunEdgeopt({cmd, "--help"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_NE(r.out.find(std::string("edgeopt ") + cmd), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Examples:"), std::string::npos) << r.out;
  }
}

TEST(CliUsage, Version) {
  CliResult r = RunEdgeopt({"--version"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out.rfind("edgeopt ", 0), 0u) << r.out;
}

TEST(CliUsage, NoCommandIsAUsageError) {
  CliResult r = RunEdgeopt({});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("edgeopt: error: no command given"), std::string::npos) << r.err;
}

TEST(CliUsage, UnknownCommand) {
  CliResult r = RunEdgeopt({"frobnicate", "model.tflite"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("edgeopt: error: unknown command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("inspect"), std::string::npos) << "should list the commands: " << r.err;
}

TEST(CliUsage, UnknownFlags) {
  CliResult top = RunEdgeopt({"--frobnicate"});
  EXPECT_EQ(top.exit_code, 2) << Describe(top);
  EXPECT_NE(top.err.find("edgeopt: error:"), std::string::npos) << top.err;

  CliResult sub = RunEdgeopt({"inspect", "--frobnicate", "model.tflite"});
  EXPECT_EQ(sub.exit_code, 2) << Describe(sub);
  EXPECT_NE(sub.err.find("edgeopt inspect: error:"), std::string::npos) << sub.err;
  EXPECT_NE(sub.err.find("--frobnicate"), std::string::npos) << sub.err;
  EXPECT_NE(sub.err.find("edgeopt inspect --help"), std::string::npos) << sub.err;
  EXPECT_TRUE(sub.out.empty()) << sub.out;
}

TEST(CliUsage, MissingArguments) {
  CliResult r = RunEdgeopt({"inspect"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("edgeopt inspect: error: model is required"), std::string::npos) << r.err;

  CliResult c = RunEdgeopt({"convert", "in.tflite"});
  EXPECT_EQ(c.exit_code, 2) << Describe(c);
  EXPECT_NE(c.err.find("edgeopt convert: error: --output is required"), std::string::npos) << c.err;
}

TEST(CliUsage, BadOptionValues) {
  const std::string dir = MakeTempDir("usage_values");
  const std::string model = MakeExampleModel(dir);
  CliResult ops = RunEdgeopt({"inspect", model, "--ops", "lots"});
  EXPECT_EQ(ops.exit_code, 2) << Describe(ops);
  EXPECT_NE(ops.err.find("--ops expects a number, 'all' or 'none'"), std::string::npos) << ops.err;

  CliResult sg = RunEdgeopt({"inspect", model, "--subgraph", "5"});
  EXPECT_EQ(sg.exit_code, 2) << Describe(sg);
  EXPECT_NE(sg.err.find("--subgraph 5 does not exist"), std::string::npos) << sg.err;

  CliResult notnum = RunEdgeopt({"inspect", model, "--subgraph", "x"});
  EXPECT_EQ(notnum.exit_code, 2) << Describe(notnum);
}

}  // namespace
}  // namespace edgeopt::testing
