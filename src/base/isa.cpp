// CPUID + XGETBV feature detection and the ISA choice (see isa.h). Plain C++ plus two inline
// asm helpers from <cpuid.h>; no SIMD intrinsics, so this file runs on any x86-64.
#include "base/isa.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "base/error.h"

#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define DLLM_X86 1
#endif

namespace dllm {
namespace {

#ifdef DLLM_X86
// XCR0: which register states the OS saves on context switch. _xgetbv() needs -mxsave, so the
// instruction is spelled out; callers check CPUID.1:ECX.OSXSAVE first.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

// Linux's permission request for the tile data state (arch/x86/include/uapi/asm/prctl.h:
// ARCH_REQ_XCOMP_PERM 0x1023; XFEATURE_XTILEDATA 18). Returns 0 or the errno.
int request_tile_permission() {
#ifdef __linux__
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr unsigned long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return 0;
  return errno;
#else
  return ENOSYS;
#endif
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#ifdef DLLM_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  __cpuid_count(1, 0, a, b, c, d);
  const bool osxsave = (c >> 27) & 1;
  const bool avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool os_avx = (xcr0 & 0x6) == 0x6;       // XMM (bit 1) and YMM (bit 2) state
  const bool os_avx512 = (xcr0 & 0xE6) == 0xE6;  // plus opmask, ZMM_Hi256, Hi16_ZMM (bits 5-7)
  if (!os_avx) return f;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const unsigned ebx7 = b, ecx7 = c, edx7 = d, max_sub7 = a;
  f.avx2 = (ebx7 >> 5) & 1;
  f.amx_tile = (edx7 >> 24) & 1;
  f.amx_int8 = (edx7 >> 25) & 1;
  f.amx_bf16 = (edx7 >> 22) & 1;
  f.os_tile_state = (xcr0 & 0x60000) == 0x60000;  // XTILECFG (bit 17), XTILEDATA (bit 18)
  if (f.amx_tile && (f.amx_int8 || f.amx_bf16) && f.os_tile_state) {
    f.amx_permission_errno = request_tile_permission();
    f.amx_permitted = f.amx_permission_errno == 0;
  }
  if (os_avx512) {
    f.avx512f = (ebx7 >> 16) & 1;
    f.avx512dq = (ebx7 >> 17) & 1;
    f.avx512bw = (ebx7 >> 30) & 1;
    f.avx512vl = (ebx7 >> 31) & 1;
    f.avx512vnni = (ecx7 >> 11) & 1;
  }
  if (max_sub7 >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx_vnni = (a >> 4) & 1;
  }
#endif
  return f;
}

struct IsaNames {
  Isa isa;
  const char* name;
};
constexpr IsaNames kNames[] = {{Isa::kScalar, "scalar"},
                               {Isa::kScalar, "ref"},
                               {Isa::kAvx2, "avx2"},
                               {Isa::kAvxVnni, "avxvnni"},
                               {Isa::kAvx512Vnni, "avx512vnni"},
                               {Isa::kAvx512Vnni, "avx512"},
                               {Isa::kAmx, "amx"}};
constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmx};

// Why the tile unit cannot be used, apart from the AVX-512 part kAmx also needs; empty when it can.
std::string tile_reason(const CpuFeatures& f) {
  if (!f.amx_tile || !f.amx_int8) {
    std::string out = "cpu lacks";
    if (!f.amx_tile) out += " amx_tile";
    if (!f.amx_int8) out += " amx_int8";
    return out;
  }
  if (!f.os_tile_state) return "OS does not enable tile state (XCR0 bits 17-18)";
  if (!f.amx_permitted)
    return std::string("OS did not grant XTILEDATA: ") + std::strerror(f.amx_permission_errno);
  return "";
}

// What `isa` needs beyond what this machine has, as "AVX2 FMA" etc.; empty when supported.
std::string missing_features(Isa isa) {
  const CpuFeatures& f = cpu_features();
  std::string out;
  auto need = [&](bool have, const char* name) {
    if (have) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  if (isa == Isa::kScalar) return out;
  // Every SIMD path also converts f16 scales (F16C) and uses FMA for the f32 accumulation.
  need(f.avx2, "AVX2");
  need(f.fma, "FMA");
  need(f.f16c, "F16C");
  if (isa == Isa::kAvxVnni) need(f.avx_vnni, "AVX-VNNI");
  if (isa == Isa::kAvx512Vnni || isa == Isa::kAmx) {
    need(f.avx512f, "AVX-512F");
    need(f.avx512bw, "AVX-512BW");
    need(f.avx512vl, "AVX-512VL");
    need(f.avx512dq, "AVX-512DQ");
    need(f.avx512vnni, "AVX-512VNNI");
  }
  if (isa == Isa::kAmx) {
    const std::string tiles = tile_reason(f);
    if (!tiles.empty()) need(false, ("AMX (" + tiles + ")").c_str());
  }
  return out;
}

std::string supported_list() {
  std::string out;
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) continue;
    if (!out.empty()) out += ' ';
    out += isa_name(isa);
  }
  return out;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvxVnni:
      return "avxvnni";
    case Isa::kAvx512Vnni:
      return "avx512vnni";
    case Isa::kAmx:
      return "amx";
  }
  return "unknown";
}

Isa vector_isa(Isa isa) {
  return isa == Isa::kAmx ? Isa::kAvx512Vnni : isa;
}

std::string amx_unavailable_reason() {
  const std::string tiles = tile_reason(cpu_features());
  if (!tiles.empty()) return tiles;
  const std::string vec = missing_features(Isa::kAvx512Vnni);
  return vec.empty() ? "" : "cpu/OS lacks " + vec;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(Isa isa) {
  return missing_features(isa).empty();
}

bool amx_bf16_supported() {
  const CpuFeatures& f = cpu_features();
  return f.amx_tile && f.amx_bf16 && f.os_tile_state && f.amx_permitted && isa_supported(Isa::kAvx512Vnni);
}

Isa best_isa() {
  // amx first: it is avx512vnni with Q4_K and Q5_K on tiles, which measured faster from 7 tokens up
  // and runs fewer on zmm (docs/kernels.md "Intel AMX tiles").
  for (Isa isa : {Isa::kAmx, Isa::kAvx512Vnni, Isa::kAvxVnni, Isa::kAvx2}) {
    if (isa_supported(isa)) return isa;
  }
  return Isa::kScalar;
}

Isa parse_isa(std::string_view name) {
  for (const IsaNames& n : kNames) {
    if (name == n.name) return n.isa;
  }
  throw UsageError("unknown ISA '" + std::string(name) +
                   "': expected auto, scalar, avx2, avxvnni, avx512vnni or amx");
}

std::string isa_from_env() {
  const char* env = std::getenv("DLLM_CPU_ISA");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "auto") return "";
  return env;
}

Isa choose_isa(std::string_view requested) {
  std::string source = "--isa";
  std::string name(requested);
  if (name.empty() || name == "auto") {
    name = isa_from_env();
    if (name.empty()) return best_isa();
    source = "DLLM_CPU_ISA=";
  }
  Isa isa = Isa::kScalar;
  try {
    isa = parse_isa(name);
  } catch (const UsageError& e) {
    if (source == "--isa") throw;
    // Name the variable: the user may not remember setting it.
    throw UsageError("environment variable DLLM_CPU_ISA: " + std::string(e.what()) +
                     " (or unset it to pick the best path)");
  }
  const std::string missing = missing_features(isa);
  if (!missing.empty()) {
    std::string msg = source;
    if (source == "--isa") msg += ' ';
    msg += name;
    msg += ": this CPU/OS lacks ";
    msg += missing;
    msg += "; supported here: ";
    msg += supported_list();
    throw UsageError(msg);
  }
  return isa;
}

std::string amx_status(Isa chosen) {
  if (chosen == Isa::kAmx) return "running";
  const std::string why = amx_unavailable_reason();
  if (why.empty()) return "supported, not chosen (--isa amx runs it)";
  return "unavailable: " + why;
}

std::string describe_isa(Isa chosen) {
  // The panel GEMM's own choice (cpu/panel_gemm.h panel_gemm_isa), said here so --verbose shows it.
  const std::string bf16 = (chosen == Isa::kAvx512Vnni || chosen == Isa::kAmx) && amx_bf16_supported()
                               ? "; amx-bf16: runs the f16 self-conditioning product"
                               : "";
  return std::string("cpu: ") + isa_name(chosen) + " (supported: " + supported_list() +
         "; amx: " + amx_status(chosen) + bf16 + ")";
}

std::string describe_default_isa() {
  const std::string env = isa_from_env();
  try {
    std::string s = describe_isa(choose_isa());
    if (!env.empty()) s += " [DLLM_CPU_ISA=" + env + "]";
    return s;
  } catch (const UsageError& e) {
    return std::string("cpu: ") + e.what() + " (run refuses it)";
  }
}

}  // namespace dllm
