// ISA detection and choice (src/base/isa): CPUID + XGETBV flags against the kernel's own view in
// /proc/cpuinfo (an independent reader of the same CPUID bits, masked by what the OS enabled), name
// parsing, the --isa / $DLLM_CPU_ISA override and its errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/isa.h"

namespace dllm {
namespace {

// The "flags" line of /proc/cpuinfo, or an empty set where there is none.
std::set<std::string> proc_cpu_flags() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> out;
      for (std::string w; words >> w;) out.insert(w);
      return out;
    }
  }
  return {};
}

TEST(Dispatch, FeaturesMatchProcCpuinfo) {
  const std::set<std::string> flags = proc_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line on this system";
  const CpuFeatures& f = cpu_features();
  auto has = [&](const char* name) { return flags.count(name) > 0; };
  EXPECT_EQ(f.avx2, has("avx2"));
  EXPECT_EQ(f.fma, has("fma"));
  EXPECT_EQ(f.f16c, has("f16c"));
  EXPECT_EQ(f.avx_vnni, has("avx_vnni"));
  EXPECT_EQ(f.avx512f, has("avx512f"));
  EXPECT_EQ(f.avx512bw, has("avx512bw"));
  EXPECT_EQ(f.avx512vl, has("avx512vl"));
  EXPECT_EQ(f.avx512dq, has("avx512dq"));
  EXPECT_EQ(f.avx512vnni, has("avx512_vnni"));
}

TEST(Dispatch, BestIsaIsSupportedAndScalarAlwaysIs) {
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_TRUE(isa_supported(best_isa()));
  // Nothing supported ranks above the best (amx, then avx512vnni).
  if (best_isa() != Isa::kAmx) {
    EXPECT_FALSE(isa_supported(Isa::kAmx));
  }
  if (best_isa() != Isa::kAmx && best_isa() != Isa::kAvx512Vnni) {
    EXPECT_FALSE(isa_supported(Isa::kAvx512Vnni));
  }
}

TEST(Dispatch, ParsesNamesAndAliases) {
  EXPECT_EQ(parse_isa("scalar"), Isa::kScalar);
  EXPECT_EQ(parse_isa("ref"), Isa::kScalar);
  EXPECT_EQ(parse_isa("avx2"), Isa::kAvx2);
  EXPECT_EQ(parse_isa("avxvnni"), Isa::kAvxVnni);
  EXPECT_EQ(parse_isa("avx512vnni"), Isa::kAvx512Vnni);
  EXPECT_EQ(parse_isa("avx512"), Isa::kAvx512Vnni);
  EXPECT_EQ(parse_isa("amx"), Isa::kAmx);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmx})
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
}

TEST(Dispatch, UnknownNameIsAUsageErrorListingTheNames) {
  try {
    parse_isa("sse9");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown ISA 'sse9': expected auto, scalar, avx2, avxvnni, avx512vnni or amx");
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(Dispatch, ChooseIsaHonoursFlagThenEnvironment) {
  {
    ScopedEnv env("DLLM_CPU_ISA", nullptr);
    EXPECT_EQ(choose_isa(""), best_isa());
    EXPECT_EQ(choose_isa("auto"), best_isa());
    EXPECT_EQ(choose_isa("scalar"), Isa::kScalar);
  }
  {
    ScopedEnv env("DLLM_CPU_ISA", "scalar");
    EXPECT_EQ(choose_isa(""), Isa::kScalar);
    EXPECT_EQ(choose_isa("auto"), Isa::kScalar);
    EXPECT_EQ(choose_isa(isa_name(best_isa())), best_isa());  // the flag wins over the environment
  }
  {
    ScopedEnv env("DLLM_CPU_ISA", "bogus");
    EXPECT_THROW(choose_isa(""), UsageError);
  }
}

TEST(Dispatch, UnsupportedIsaIsRefusedNamingWhatIsMissing) {
  Isa missing = Isa::kScalar;
  for (Isa isa : {Isa::kAvx512Vnni, Isa::kAvxVnni, Isa::kAvx2}) {
    if (!isa_supported(isa)) missing = isa;
  }
  if (missing == Isa::kScalar)
    GTEST_SKIP() << "this CPU supports every path (" << describe_isa(best_isa()) << ")";
  ScopedEnv env("DLLM_CPU_ISA", nullptr);
  try {
    choose_isa(isa_name(missing));
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("this CPU/OS lacks"), std::string::npos) << msg;
    EXPECT_NE(msg.find("supported here: scalar"), std::string::npos) << msg;
  }
}

TEST(Dispatch, DescribeNamesTheChoiceAndTheSupportedPaths) {
  const std::string s = describe_isa(Isa::kScalar);
  EXPECT_EQ(s.rfind("cpu: scalar (supported: scalar", 0), 0u) << s;
}

// AMX: /proc/cpuinfo lists amx_tile / amx_int8 only where CPUID has them (a kernel too old to know
// the names lists neither), and where the whole path is usable the kernel knows and lists both.
TEST(Dispatch, AmxFlagsAgreeWithProcCpuinfo) {
  const std::set<std::string> flags = proc_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line on this system";
  const CpuFeatures& f = cpu_features();
  if (flags.count("amx_tile")) {
    EXPECT_TRUE(f.amx_tile);
  }
  if (flags.count("amx_int8")) {
    EXPECT_TRUE(f.amx_int8);
  }
  if (flags.count("amx_bf16")) {
    EXPECT_TRUE(f.amx_bf16);
  }
  if (amx_bf16_supported()) {
    EXPECT_TRUE(flags.count("amx_tile") && flags.count("amx_bf16"));
    EXPECT_TRUE(f.os_tile_state && f.amx_permitted);
  }
  if (isa_supported(Isa::kAmx)) {
    EXPECT_TRUE(flags.count("amx_tile") && flags.count("amx_int8"));
    EXPECT_TRUE(f.os_tile_state && f.amx_permitted);
    EXPECT_TRUE(isa_supported(Isa::kAvx512Vnni));
    EXPECT_EQ(amx_unavailable_reason(), "");
  } else {
    EXPECT_NE(amx_unavailable_reason(), "");
  }
  // The permission is asked for only where the CPU and OS have the tile state.
  if (!(f.amx_tile && (f.amx_int8 || f.amx_bf16) && f.os_tile_state)) {
    EXPECT_FALSE(f.amx_permitted);
    EXPECT_EQ(f.amx_permission_errno, 0);
  }
}

// auto (flag or environment) picks the tile path exactly where it is supported; its vector code is
// avx512vnni's.
TEST(Dispatch, AutoPicksAmxWhereSupported) {
  ScopedEnv env("DLLM_CPU_ISA", nullptr);
  const bool amx = isa_supported(Isa::kAmx);
  EXPECT_EQ(best_isa() == Isa::kAmx, amx);
  EXPECT_EQ(choose_isa("") == Isa::kAmx, amx);
  EXPECT_EQ(choose_isa("auto") == Isa::kAmx, amx);
  if (!amx && isa_supported(Isa::kAvx512Vnni)) {
    EXPECT_EQ(best_isa(), Isa::kAvx512Vnni);
  }
  EXPECT_EQ(vector_isa(Isa::kAmx), Isa::kAvx512Vnni);
  EXPECT_EQ(vector_isa(Isa::kAvx2), Isa::kAvx2);
}

// Without AMX, --isa amx (and DLLM_CPU_ISA=amx) is a usage error that says what is missing.
TEST(Dispatch, AmxWithoutAmxIsAUsageErrorNamingWhatIsMissing) {
  if (isa_supported(Isa::kAmx)) {
    ScopedEnv env("DLLM_CPU_ISA", nullptr);
    EXPECT_EQ(choose_isa("amx"), Isa::kAmx);
    EXPECT_NE(describe_isa(Isa::kAmx).find("amx: running"), std::string::npos);
    GTEST_SKIP() << "this CPU/OS runs the amx path (" << describe_isa(Isa::kAmx) << ")";
  }
  const std::string why = amx_unavailable_reason();
  for (const char* env_value : {static_cast<const char*>(nullptr), "amx"}) {
    ScopedEnv env("DLLM_CPU_ISA", env_value);
    try {
      choose_isa(env_value ? "" : "amx");
      FAIL() << "no exception";
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(env_value ? "DLLM_CPU_ISA=amx: this CPU/OS lacks" : "--isa amx: this CPU/OS lacks"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find(why), std::string::npos) << msg;
    }
  }
  EXPECT_NE(describe_isa(best_isa()).find("; amx: unavailable: " + why + ")"), std::string::npos)
      << describe_isa(best_isa());
  EXPECT_EQ(amx_status(best_isa()), "unavailable: " + why);
}

}  // namespace
}  // namespace dllm
