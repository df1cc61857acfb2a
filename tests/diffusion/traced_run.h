// Runs the sampler with a TraceWriter into a temporary file and reads the file back, so that trace tests
// check what a user's `--trace FILE` would hold, line by line.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "diffusion/sampler.h"
#include "diffusion/trace.h"
#include "forward/pass.h"
#include "test_util.h"

namespace dllm::test {

/// generate(model, prompt, p) with every step written by TraceWriter; returns the parsed lines, one per step.
inline std::vector<nlohmann::json> traced_run(forward::Forward& model, std::span<const int32_t> prompt,
                                              const diffusion::SamplerParams& p) {
  TempDir dir;
  const std::string path = (dir / "trace.jsonl").string();
  {
    diffusion::TraceWriter trace(path);
    diffusion::SamplerCallbacks cb;
    cb.on_step = [&](const diffusion::StepInfo& s) { trace.write(s); };
    diffusion::generate(model, prompt, p, cb);
    trace.commit();
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace dllm::test
