// ggml type table: name, elements per block, bytes per block.
// Block sizes follow the struct layouts in ggml/src/ggml-common.h (llama.cpp); the sum of the field
// sizes of each block_* struct is written beside it so a reader can check it against the layout.
#include "gguf/ggml_types.h"

#include <array>

namespace dllm::gguf {

namespace {

constexpr int64_t kQK_K = 256;

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

// Ids 4, 5 (old Q4_2/Q4_3), 31-33 and 36-38 (removed repacked types) are not valid in files.
constexpr Entry kEntries[] = {
    {0, {"F32", 1, 4}},
    {1, {"F16", 1, 2}},
    {2, {"Q4_0", 32, 2 + 16}},                     // d, qs[16]
    {3, {"Q4_1", 32, 2 + 2 + 16}},                 // d, m, qs[16]
    {6, {"Q5_0", 32, 2 + 4 + 16}},                 // d, qh[4], qs[16]
    {7, {"Q5_1", 32, 2 + 2 + 4 + 16}},             // d, m, qh[4], qs[16]
    {8, {"Q8_0", 32, 2 + 32}},                     // d, qs[32]
    {9, {"Q8_1", 32, 2 + 2 + 32}},                 // d, s, qs[32]
    {10, {"Q2_K", kQK_K, 16 + 64 + 2 + 2}},        // scales, qs, d, dmin
    {11, {"Q3_K", kQK_K, 32 + 64 + 12 + 2}},       // hmask, qs, scales, d
    {12, {"Q4_K", kQK_K, 2 + 2 + 12 + 128}},       // d, dmin, scales, qs
    {13, {"Q5_K", kQK_K, 2 + 2 + 12 + 32 + 128}},  // d, dmin, scales, qh, qs
    {14, {"Q6_K", kQK_K, 128 + 64 + 16 + 2}},      // ql, qh, scales, d
    {15, {"Q8_K", kQK_K, 4 + 256 + 32}},           // d (f32), qs, bsums[16]
    {16, {"IQ2_XXS", kQK_K, 2 + 64}},              // d, qs[32] (u16)
    {17, {"IQ2_XS", kQK_K, 2 + 64 + 8}},           // d, qs[32] (u16), scales[8]
    {18, {"IQ3_XXS", kQK_K, 2 + 96}},              // d, qs[96]
    {19, {"IQ1_S", kQK_K, 2 + 32 + 16}},           // d, qs[32], qh[8] (u16)
    {20, {"IQ4_NL", 32, 2 + 16}},                  // d, qs[16]
    {21, {"IQ3_S", kQK_K, 2 + 64 + 8 + 32 + 4}},   // d, qs, qh, signs, scales
    {22, {"IQ2_S", kQK_K, 2 + 64 + 8 + 8}},        // d, qs, qh, scales
    {23, {"IQ4_XS", kQK_K, 2 + 2 + 4 + 128}},      // d, scales_h, scales_l, qs
    {24, {"I8", 1, 1}},
    {25, {"I16", 1, 2}},
    {26, {"I32", 1, 4}},
    {27, {"I64", 1, 8}},
    {28, {"F64", 1, 8}},
    {29, {"IQ1_M", kQK_K, 32 + 16 + 8}},  // qs, qh, scales
    {30, {"BF16", 1, 2}},
    {34, {"TQ1_0", kQK_K, 48 + 4 + 2}},  // qs, qh, d
    {35, {"TQ2_0", kQK_K, 64 + 2}},      // qs, d
    {39, {"MXFP4", 32, 1 + 16}},         // e, qs[16]
};

constexpr std::array<const TypeTraits*, static_cast<size_t>(GgmlType::kSentinel)> build_table() {
  std::array<const TypeTraits*, static_cast<size_t>(GgmlType::kSentinel)> table{};
  for (const Entry& e : kEntries) table[e.id] = &e.traits;
  return table;
}

constexpr auto kTable = build_table();

}  // namespace

const TypeTraits* type_traits(uint32_t type_id) {
  if (type_id >= kTable.size()) return nullptr;
  return kTable[type_id];
}

std::string type_name(uint32_t type_id) {
  if (const TypeTraits* t = type_traits(type_id)) return t->name;
  return "type" + std::to_string(type_id);
}

}  // namespace dllm::gguf
