// The CPU instruction-set paths and the one place that detects them: which instruction sets this CPU
// and OS support (CPUID plus XGETBV), the best of them, and the user's choice (--isa, $DLLM_CPU_ISA).
// Every SIMD kernel is chosen from an Isa picked here: the forward pass's (src/cpu) and the sampler's
// row sums (src/diffusion, through SamplerParams::isa), so `--isa scalar` runs no SIMD path anywhere.
// Intrinsics live only in files named *_avx2.cpp / *_avxvnni.cpp / *_avx512.cpp / *_amx.cpp
// (CMakeLists.txt gives each its flags); nothing here uses any.
#pragma once

#include <string>
#include <string_view>

namespace dllm {

/// Instruction-set paths of the CPU kernels. kScalar is portable C++ and is what the tests check the
/// others against. kAmx is the AVX-512 VNNI path with the quantized GEMM on Intel AMX tiles
/// (cpu/kernels/qgemm_tiles_kernel.h); everything else runs the AVX-512 kernels there.
enum class Isa { kScalar, kAvx2, kAvxVnni, kAvx512Vnni, kAmx };

/// "scalar", "avx2", "avxvnni", "avx512vnni", "amx".
const char* isa_name(Isa isa);

/// The vector path of the kernels that have no tile version (row kernels, the sampler's row sums):
/// kAvx512Vnni for kAmx, `isa` itself otherwise.
Isa vector_isa(Isa isa);

/// What CPUID reports, already combined with the OS's XSAVE state (XCR0): a flag is true only when the
/// CPU has the instructions AND the OS saves the registers they use (AVX: XMM|YMM state; AVX-512 also
/// opmask, ZMM_Hi256, Hi16_ZMM). Source: Intel SDM vol. 2 CPUID leaves 1, 7.0, 7.1; vol. 1 13.3 (XCR0).
struct CpuFeatures {
  bool avx2 = false;           ///< leaf 7.0 EBX bit 5
  bool fma = false;            ///< leaf 1 ECX bit 12
  bool f16c = false;           ///< leaf 1 ECX bit 29
  bool avx_vnni = false;       ///< leaf 7.1 EAX bit 4 (VEX-encoded vpdpbusd on ymm)
  bool avx512f = false;        ///< leaf 7.0 EBX bit 16
  bool avx512bw = false;       ///< leaf 7.0 EBX bit 30
  bool avx512vl = false;       ///< leaf 7.0 EBX bit 31
  bool avx512dq = false;       ///< leaf 7.0 EBX bit 17
  bool avx512vnni = false;     ///< leaf 7.0 ECX bit 11
  bool amx_tile = false;       ///< leaf 7.0 EDX bit 24 (CPU only; the OS part is below)
  bool amx_int8 = false;       ///< leaf 7.0 EDX bit 25
  bool amx_bf16 = false;       ///< leaf 7.0 EDX bit 22
  bool os_tile_state = false;  ///< XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the OS saves tile state
  /// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) succeeded (Linux asks each process to
  /// request the 8 KB tile state before its first tile instruction; Documentation/arch/x86/xstate.rst).
  /// Requested once, by the detection, only when amx_tile, os_tile_state and amx_int8 or amx_bf16 hold.
  bool amx_permitted = false;
  int amx_permission_errno = 0;  ///< the request's errno when it failed, else 0
};

/// Detected once per process (thread-safe).
const CpuFeatures& cpu_features();

/// True when this CPU and OS can run the kernel path `isa` (kScalar always).
bool isa_supported(Isa isa);

/// True when this CPU and OS can run AMX-BF16 tiles (tdpbf16ps) beside the AVX-512 path: amx_tile,
/// amx_bf16, the OS's tile state and permission, and what kAvx512Vnni needs.
bool amx_bf16_supported();

/// Why this machine cannot run kAmx, e.g. "cpu lacks amx_tile amx_int8", "OS does not enable tile
/// state (XCR0 bits 17-18)", "OS did not grant XTILEDATA: Operation not permitted", or what kAvx512Vnni
/// lacks; empty when it can.
std::string amx_unavailable_reason();

/// The path `auto` picks: kAmx, else kAvx512Vnni, else kAvxVnni, else kAvx2, else kScalar (kAmx is
/// kAvx512Vnni with Q4_K and Q5_K on AMX tiles, measured faster: docs/kernels.md, "Intel AMX tiles").
/// Ignores $DLLM_CPU_ISA (see choose_isa).
Isa best_isa();

/// Parses an ISA name: "scalar" (alias "ref"), "avx2", "avxvnni", "avx512vnni" (alias "avx512"), "amx".
/// Throws dllm::UsageError "unknown ISA '<name>': expected auto, scalar, avx2, avxvnni, avx512vnni or
/// amx".
Isa parse_isa(std::string_view name);

/// The path to run: `requested` is a --isa value; "" or "auto" means $DLLM_CPU_ISA when set (and not
/// "auto"), else best_isa(). Throws dllm::UsageError for an unknown name, and for a path this machine
/// cannot run: "--isa <name>: this CPU/OS lacks <features>; supported here: <list>".
Isa choose_isa(std::string_view requested = "");

/// One line for --verbose: "cpu: avx512vnni (supported: scalar avx2 avxvnni avx512vnni; amx: unavailable:
/// cpu lacks amx_tile amx_int8)"; the part after ';' is amx_status() ("amx: running", or "amx: supported,
/// not chosen (--isa amx runs it)" where it could), then "; amx-bf16: runs the f16 self-conditioning product"
/// where `chosen` is an AVX-512 path and amx_bf16_supported() (cpu/panel_gemm.h panel_gemm_isa).
std::string describe_isa(Isa chosen);

/// $DLLM_CPU_ISA when it names a path (set, not empty, not "auto"), else "": what choose_isa() runs
/// without --isa when the variable is set.
std::string isa_from_env();

/// What `run` picks without --isa, in one line for --version: describe_isa(choose_isa()) with
/// " [DLLM_CPU_ISA=<value>]" appended when the variable chose it; when the variable names a path
/// choose_isa refuses, "cpu: " + that error's message + " (run refuses it)" instead of throwing.
std::string describe_default_isa();

/// The same AMX part alone, for --json: "running", "supported, not chosen (--isa amx runs it)" or
/// "unavailable: <amx_unavailable_reason()>".
std::string amx_status(Isa chosen);

}  // namespace dllm
