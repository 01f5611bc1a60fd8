// `asvrun ARGS...` run in the test's own process through tools::AsvrunMain, with stdout and stderr
// captured: for the LibTorch-free commands (reading the database, plots, the report), whose tests
// then need neither the asvrun executable nor LibTorch. The commands that need LibTorch (runs,
// info) throw std::logic_error if reached, unless the test links asv_asvrun_commands and passes
// them (e.g. tools::RunConfigs, for many dry runs without starting asvrun-torch for each).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tools/asvrun/cli.h"

namespace asv::testing {

struct AsvrunOutcome {
  int status = 0;    ///< asvrun's exit status
  std::string out;   ///< what it wrote to stdout
  std::string err;   ///< what it wrote to stderr
};

/// Runs `asvrun args...` in this process with `torch` as the commands that need LibTorch. Not
/// thread-safe (captures the process's stdout/stderr).
inline AsvrunOutcome Asvrun(std::vector<std::string> args, const tools::TorchCommands& torch) {
  args.insert(args.begin(), "asvrun");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  AsvrunOutcome outcome;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  outcome.status = tools::AsvrunMain(static_cast<int>(args.size()), argv.data(), torch);
  std::fflush(stdout);
  outcome.out = ::testing::internal::GetCapturedStdout();
  outcome.err = ::testing::internal::GetCapturedStderr();
  return outcome;
}

/// Runs `asvrun args...` in this process; runs and `info` throw std::logic_error.
inline AsvrunOutcome Asvrun(std::vector<std::string> args) {
  tools::TorchCommands torch;
  torch.run = [](const tools::RunOptions&) -> int { throw std::logic_error("no runs here"); };
  torch.info = []() -> int { throw std::logic_error("no info here"); };
  return Asvrun(std::move(args), torch);
}

}  // namespace asv::testing
