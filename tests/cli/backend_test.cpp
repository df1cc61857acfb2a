// What a device runs natively against what a run asks for (check_support, make_backend): a K/V state
// the device does not keep is refused naming --cache, a batch it runs canvas by canvas draws a
// warning naming --cfg-scale. Checked with stated capabilities and, through the binary, on the GPU
// backend, which refuses before it looks for a GPU: so this holds in builds without CUDA and on
// machines without a GPU as well.
#include "engine/backend.h"

#include <string>
#include <vector>

#include "cli/run_binary.h"

namespace {

using dllm::diffusion::CacheMode;
using dllm::engine::BackendOptions;
using dllm::engine::check_support;
using dllm::forward::Capabilities;
using dllm::test::is_one_error_line;
using dllm::test::llada_path;
using dllm::test::run_dllm;
using dllm::test::RunResult;

/// Capabilities that state only whole passes, one segment each, as the GPU backend does.
Capabilities full_passes_only() {
  Capabilities caps;
  caps.max_rows = 64;
  return caps;
}

std::string message_of(const Capabilities& s, const std::string& device, const BackendOptions& o) {
  try {
    check_support(s, device, o);
  } catch (const dllm::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceSupport, TheDefaultCapabilitiesStateNeitherCacheNorBatch) {
  const Capabilities s;
  EXPECT_FALSE(s.kv_state);
  EXPECT_FALSE(s.masks);
  EXPECT_EQ(s.max_segments, 1);
}

TEST(DeviceSupport, ACacheTheDeviceLacksIsRefusedNamingTheFlag) {
  const Capabilities gpu = full_passes_only();
  BackendOptions o;
  o.device = "gpu";
  for (CacheMode mode : {CacheMode::kPrefix, CacheMode::kDual}) {
    o.cache = mode;
    const std::string m = message_of(gpu, "gpu", o);
    EXPECT_NE(m.find(std::string("--cache ") + dllm::diffusion::cache_mode_name(mode)), std::string::npos)
        << m;
    EXPECT_NE(m.find("--device cpu"), std::string::npos) << m;
    EXPECT_NE(m.find("--cache none"), std::string::npos) << m;
  }
  o.device = "auto";
  EXPECT_NE(message_of(gpu, "gpu", o).find("--device auto"), std::string::npos);
  o.cache = CacheMode::kNone;
  EXPECT_EQ(message_of(gpu, "gpu", o), "");
  EXPECT_TRUE(check_support(gpu, "gpu", o).empty());
}

TEST(DeviceSupport, ABatchRunCanvasByCanvasIsAWarningNamingTheFlag) {
  BackendOptions o;
  o.device = "gpu";
  o.max_batch = 2;  // --cfg-scale
  const std::vector<std::string> w = check_support(full_passes_only(), "gpu", o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("--cfg-scale: ", 0), 0u) << w[0];
  EXPECT_NE(w[0].find("the same text"), std::string::npos) << w[0];
}

TEST(DeviceSupport, WhatTheDeviceRunsDrawsNothing) {
  BackendOptions o;
  o.max_batch = 2;
  o.cache = CacheMode::kDual;
  Capabilities cpu;
  cpu.kv_state = true;
  cpu.max_segments = 2;
  EXPECT_TRUE(check_support(cpu, "cpu", o).empty());
}

TEST(DeviceSupport, TheGpuBackendRefusesACacheBeforeLookingForAGpu) {
  for (const char* mode : {"prefix", "dual"}) {
    const RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8",
                                  "--block-length", "8", "--device", "gpu", "--cache", mode});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(std::string("--cache ") + mode), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(DeviceSupport, TheCpuRunsTheCacheAndCfgWithoutAWord) {
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8",
                          "--block-length", "8", "--device", "cpu", "--cache", "dual"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--cache"), std::string::npos) << r.err;
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--block-length", "8",
                "--device", "cpu", "--cfg-scale", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--cfg-scale"), std::string::npos) << r.err;
}

}  // namespace
