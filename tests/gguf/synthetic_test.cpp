// tools/make_synthetic_gguf: runs the binary and checks what it wrote with the GGUF reader: the
// tensor directory against the model shapes, the Q4_K_M type mix against layer lists worked out by
// hand from llama.cpp's use_more_bits rule, every Q4_K / Q6_K block's f16 scales, the norms,
// Dream's biases, and the tokenizer metadata (special ids at their real positions). The LLaDA2 (Ling 2.0)
// files are also checked against ../shared/reference/tiny-llada2-q4km.gguf, which llama.cpp's
// llama-quantize made: the same tensor directory, types and keys.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "test_util.h"

namespace dllm::gguf {
namespace {

#ifdef DLLM_SYNTHETIC_TOOL
const char* kTool = DLLM_SYNTHETIC_TOOL;
#else
const char* kTool = nullptr;
#endif

struct ToolRun {
  int rc;
  std::string out;  // stdout + stderr
};

ToolRun run_tool(const std::string& args) {
  const std::string cmd = std::string(kTool) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// IEEE binary16 -> float (written from the format: 1 sign, 5 exponent, 10 mantissa bits).
float half_to_float(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant + 1024), exp - 25);
  }
  return sign ? -v : v;
}

// ---- The expected file, from the model facts ---------------------------------------------------

struct Shape {
  int64_t n_embd, n_head, n_head_kv, n_ff, n_vocab;
  bool bias;
};
const Shape kLlada{4096, 32, 32, 12288, 126464, false};  // LLaDA-8B config.json
const Shape kDream{3584, 28, 4, 18944, 152064, true};    // Dream-v0-Instruct-7B config.json

struct Expected {
  std::string name, type;
  std::vector<int64_t> ne;
};

/// Tensors in llama-quantize order; `q6_layers` = layers whose attn_v / ffn_down are Q6_K.
std::vector<Expected> expected_tensors(const Shape& s, int n_layer, const std::set<int>& q6_layers) {
  const int64_t kv = s.n_embd / s.n_head * s.n_head_kv;
  std::vector<Expected> e = {{"output.weight", "Q6_K", {s.n_embd, s.n_vocab}},
                             {"output_norm.weight", "F32", {s.n_embd}},
                             {"token_embd.weight", "Q4_K", {s.n_embd, s.n_vocab}}};
  for (int i = 0; i < n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const std::string mixed = q6_layers.count(i) ? "Q6_K" : "Q4_K";
    if (s.bias) e.push_back({b + "attn_k.bias", "F32", {kv}});
    e.push_back({b + "attn_k.weight", "Q4_K", {s.n_embd, kv}});
    e.push_back({b + "attn_norm.weight", "F32", {s.n_embd}});
    e.push_back({b + "attn_output.weight", "Q4_K", {s.n_embd, s.n_embd}});
    if (s.bias) e.push_back({b + "attn_q.bias", "F32", {s.n_embd}});
    e.push_back({b + "attn_q.weight", "Q4_K", {s.n_embd, s.n_embd}});
    if (s.bias) e.push_back({b + "attn_v.bias", "F32", {kv}});
    e.push_back({b + "attn_v.weight", mixed, {s.n_embd, kv}});
    e.push_back({b + "ffn_down.weight", mixed, {s.n_ff, s.n_embd}});
    e.push_back({b + "ffn_gate.weight", "Q4_K", {s.n_embd, s.n_ff}});
    e.push_back({b + "ffn_norm.weight", "F32", {s.n_embd}});
    e.push_back({b + "ffn_up.weight", "Q4_K", {s.n_embd, s.n_ff}});
  }
  return e;
}

std::set<int> range(int a, int b, int step = 1) {
  std::set<int> s;
  for (int i = a; i <= b; i += step) s.insert(i);
  return s;
}
std::set<int> operator+(std::set<int> a, const std::set<int>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2, worked out by hand:
//   n = 32: n/8 = 4, 7n/8 = 28 -> 0-3, 28-31, and 6, 9, ..., 27.
//   n = 28: n/8 = 3, 7n/8 = 24 -> 0-2, 24-27, and 5, 8, ..., 23.
//   n = 9:  n/8 = 1, 7n/8 = 7  -> 0, 7-8, and 3, 6.
//   n = 2:  n/8 = 0, 7n/8 = 1  -> 1 (i = 0: 0 % 3 = 0).
//   n = 1:  n/8 = 0, 7n/8 = 0  -> 0.
const std::set<int> kMix32 = range(0, 3) + range(28, 31) + range(6, 27, 3);
const std::set<int> kMix28 = range(0, 2) + range(24, 27) + range(5, 23, 3);
const std::set<int> kMix9 = std::set<int>{0, 7, 8, 3, 6};

std::vector<Expected> parse_dry_run(const std::string& out) {
  std::vector<Expected> got;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    Expected e;
    std::string dims;
    ls >> e.name >> e.type >> dims;
    std::istringstream ds(dims);
    for (std::string d; std::getline(ds, d, ',');) e.ne.push_back(std::stoll(d));
    got.push_back(e);
  }
  return got;
}

void expect_same(const std::vector<Expected>& got, const std::vector<Expected>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(got[k].name, want[k].name) << k;
    EXPECT_EQ(got[k].type, want[k].type) << want[k].name;
    EXPECT_EQ(got[k].ne, want[k].ne) << want[k].name;
  }
}

TEST(SyntheticGguf, FullSizePlansFollowTheQ4KMMix) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  ToolRun r = run_tool("--arch llada --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same(parse_dry_run(r.out), expected_tensors(kLlada, 32, kMix32));
  r = run_tool("--arch dream --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same(parse_dry_run(r.out), expected_tensors(kDream, 28, kMix28));
  r = run_tool("--arch llada --layers 9 --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same(parse_dry_run(r.out), expected_tensors(kLlada, 9, kMix9));
}

TEST(SyntheticGguf, UsageErrors) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  ToolRun r = run_tool("--arch qwen2 --out /dev/null");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(
      r.out.find(
          "ERROR: unknown --arch 'qwen2' (supported: llada, dream, llada-moe, rnd1, llada2, bailingmoe2, "
          "diffusion-gemma)"),
      std::string::npos)
      << r.out;
  r = run_tool("--arch llada --tiny --out /dev/null");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("ERROR: --tiny is only for --arch llada2 or bailingmoe2"), std::string::npos) << r.out;
  r = run_tool("--arch llada");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("ERROR: --out is required"), std::string::npos) << r.out;
  r = run_tool("--arch llada --layers x --out /dev/null");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("invalid value for --layers"), std::string::npos) << r.out;
}

/// Checks every block of every quantized tensor: f16 scales finite and of trained-weight size,
/// Q6_K scales inside int8 range used, quants not constant; norms exactly 1; biases small.
void check_tensor_data(const GgufFile& f) {
  for (const TensorInfo& t : f.tensors()) {
    SCOPED_TRACE(t.name);
    const uint8_t* p = f.tensor_data(t);
    if (t.type == GgmlType::F32) {
      const bool bias = t.name.find(".bias") != std::string::npos;
      const bool router = t.name.find("ffn_gate_inp") != std::string::npos;
      double sum_sq = 0;
      for (int64_t k = 0; k < t.n_elements(); ++k) {
        float x;
        std::memcpy(&x, p + 4 * k, 4);
        if (router) {
          ASSERT_TRUE(std::isfinite(x) && std::fabs(x) <= 0.05f) << k << " " << x;
          sum_sq += double(x) * x;
        } else if (bias) {
          ASSERT_TRUE(std::isfinite(x) && std::fabs(x) <= 0.02f) << k << " " << x;
        } else {
          ASSERT_EQ(x, 1.0f) << k;
        }
      }
      // Uniform in [-0.05, 0.05]: RMS 0.05 / sqrt(3).
      if (router) EXPECT_NEAR(std::sqrt(sum_sq / t.n_elements()), 0.05 / std::sqrt(3.0), 0.002);
      continue;
    }
    ASSERT_TRUE(t.type == GgmlType::Q4_K || t.type == GgmlType::Q6_K);
    const size_t bs = t.type == GgmlType::Q4_K ? 144 : 210;  // ggml-common.h block sizes
    const uint64_t n_blocks = t.n_bytes / bs;
    ASSERT_EQ(n_blocks * bs, t.n_bytes);
    std::array<uint64_t, 16> low_nibbles{};
    for (uint64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = p + b * bs;
      uint16_t h;
      if (t.type == GgmlType::Q4_K) {  // d at 0, dmin at 2, scales[12] at 4, qs[128] at 16
        std::memcpy(&h, blk, 2);
        const float d = half_to_float(h);
        std::memcpy(&h, blk + 2, 2);
        const float dmin = half_to_float(h);
        ASSERT_TRUE(std::isfinite(d) && d > 0 && d < 1e-2f) << "block " << b << " d " << d;
        ASSERT_TRUE(std::isfinite(dmin) && dmin > 0 && dmin < 1e-2f) << "block " << b << " dmin " << dmin;
        if (b < 4096) ++low_nibbles[blk[16 + b % 128] & 15];
      } else {  // ql[128] at 0, qh[64] at 128, int8 scales[16] at 192, d at 208
        std::memcpy(&h, blk + 208, 2);
        const float d = half_to_float(h);
        ASSERT_TRUE(std::isfinite(d) && d > 0 && d < 1e-2f) << "block " << b << " d " << d;
        for (int j = 0; j < 16; ++j) {
          const int sc = static_cast<int8_t>(blk[192 + j]);
          ASSERT_TRUE(sc >= -32 && sc <= 31) << "block " << b << " scale " << sc;
        }
        if (b < 4096) ++low_nibbles[blk[b % 128] & 15];
      }
    }
    // Random quants: every nibble value shows up in the first blocks.
    for (int v = 0; v < 16; ++v) EXPECT_GT(low_nibbles[v], 0u) << "nibble " << v;
  }
}

TEST(SyntheticGguf, DiffusionGemmaPlanHasTheLayoutOfPr24423) {
  // DiffusionGemma 26B-A4B: global layers 5, 11, 17, 23, 29 without attn_v; rows of 2112 and 704 (not
  // whole 256-blocks) fall back to Q5_0 / Q8_0 as llama-quantize does; about 16.8 GB in all, the size of
  // Unsloth's Q4_K_M file (about 16 GB).
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  const ToolRun r = run_tool("--arch diffusion-gemma --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::istringstream in(r.out);
  std::string name, type, ne;
  std::set<int> with_v;
  double bytes = 0;
  int down_fallback = 0, n = 0;
  while (in >> name >> type >> ne) {
    ++n;
    int64_t count = 1;
    std::stringstream dims(ne);
    for (std::string d; std::getline(dims, d, ',');) count *= std::stoll(d);
    const double per = type == "Q4_K"   ? 144.0 / 256
                       : type == "Q6_K" ? 210.0 / 256
                       : type == "Q5_0" ? 22.0 / 32
                       : type == "Q8_0" ? 34.0 / 32
                                        : 4.0;
    bytes += per * static_cast<double>(count);
    if (name.find("attn_v.weight") != std::string::npos) with_v.insert(std::stoi(name.substr(4)));
    if (name.find("ffn_down") != std::string::npos && name.find(".weight") != std::string::npos) {
      EXPECT_TRUE(type == "Q5_0" || type == "Q8_0") << name << " " << type;
      ++down_fallback;
    }
  }
  EXPECT_EQ(down_fallback, 60);
  EXPECT_EQ(with_v.size(), 25u);
  for (const int g : {5, 11, 17, 23, 29}) EXPECT_EQ(with_v.count(g), 0u) << g;
  EXPECT_NEAR(bytes / 1e9, 16.8, 0.1);
}

TEST(SyntheticGguf, LladaTwoLayers) {
  DLLM_REQUIRE_REFERENCE();
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  test::TempDir dir;
  const std::string path = (dir / "llada.gguf").string();
  const ToolRun r = run_tool("--arch llada --layers 2 --seed 7 --out " + path);
  ASSERT_EQ(r.rc, 0) << r.out;
  const GgufFile f = GgufFile::open(path);  // validates offsets, sizes, alignment

  std::vector<Expected> got;
  for (const TensorInfo& t : f.tensors()) {
    got.push_back({t.name, type_name(t.type), std::vector<int64_t>(t.ne, t.ne + t.n_dims)});
  }
  expect_same(got, expected_tensors(kLlada, 2, {1}));

  EXPECT_EQ(f.get_string("general.architecture"), "llada");
  EXPECT_EQ(f.get_u32("llada.block_count"), 2u);
  EXPECT_EQ(f.get_u32("llada.embedding_length"), 4096u);
  EXPECT_EQ(f.get_u32("llada.feed_forward_length"), 12288u);
  EXPECT_EQ(f.get_u32("llada.attention.head_count"), 32u);
  EXPECT_EQ(f.get_u32("llada.attention.head_count_kv"), 32u);
  EXPECT_EQ(f.get_u32("llada.context_length"), 4096u);
  EXPECT_EQ(f.get_u32("llada.vocab_size"), 126464u);
  EXPECT_EQ(f.get_f32("llada.rope.freq_base"), 500000.0f);
  EXPECT_EQ(f.get_f32("llada.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_FALSE(f.get_bool("diffusion.shift_logits"));
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "bailingmoe");
  EXPECT_EQ(f.get_u32("general.file_type"), 15u);

  // Special tokens at LLaDA's real ids (tokenizer_config.json), CONTROL (type 3).
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), 126464u);
  ASSERT_EQ(types.size(), tokens.size());
  const std::pair<uint32_t, const char*> specials[] = {
      {126080, "<|startoftext|>"},     {126081, "<|endoftext|>"},     {126336, "<|mdm_mask|>"},
      {126346, "<|start_header_id|>"}, {126347, "<|end_header_id|>"}, {126348, "<|eot_id|>"}};
  for (const auto& [id, text] : specials) {
    EXPECT_EQ(tokens[id], text) << id;
    EXPECT_EQ(types[id], 3) << id;
  }
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id"), 126080u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 126081u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.mask_token_id"), 126336u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eot_token_id"), 126348u);
  EXPECT_EQ(types[126463], 5);  // UNUSED padding rows
  EXPECT_EQ(types[0], 1);

  // Byte-level tokens first: GPT-2's bytes_to_unicode order ("!" .. "~", ..., then the
  // remapped bytes from U+0100). Byte 0 is U+0100 "Ā" at id 188; the last, byte 173, U+0143.
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(tokens[93], "~");
  EXPECT_EQ(tokens[188], "\xc4\x80");
  EXPECT_EQ(tokens[255], "\xc5\x83");
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size())
      << "duplicate token text";
  const std::set<std::string> vocab(tokens.begin(), tokens.end());
  const auto merges = f.get_string_array("tokenizer.ggml.merges");
  ASSERT_FALSE(merges.empty());
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ');
    ASSERT_NE(sp, std::string::npos) << m;
    EXPECT_TRUE(vocab.count(m.substr(0, sp)) && vocab.count(m.substr(sp + 1)) &&
                vocab.count(m.substr(0, sp) + m.substr(sp + 1)))
        << "merge '" << m << "' uses or makes a token not in the vocabulary";
  }

  // The chat template is LLaDA-8B-Instruct's, byte for byte as in the reference GGUF.
  const GgufFile ref = GgufFile::open(test::reference("tiny-llada-q4km.gguf").string());
  EXPECT_EQ(f.get_string("tokenizer.chat_template"), ref.get_string("tokenizer.chat_template"));
  // And every key the llama.cpp-made reference has (same names, same types).
  for (const KeyValue& kv : ref.metadata()) {
    const Value* v = f.find(kv.key);
    ASSERT_NE(v, nullptr) << "missing key " << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
  }

  check_tensor_data(f);
}

TEST(SyntheticGguf, DreamOneLayer) {
  DLLM_REQUIRE_REFERENCE();
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  test::TempDir dir;
  const std::string path = (dir / "dream.gguf").string();
  const ToolRun r = run_tool("--arch dream --layers 1 --out " + path);
  ASSERT_EQ(r.rc, 0) << r.out;
  const GgufFile f = GgufFile::open(path);

  std::vector<Expected> got;
  for (const TensorInfo& t : f.tensors())
    got.push_back({t.name, type_name(t.type), std::vector<int64_t>(t.ne, t.ne + t.n_dims)});
  expect_same(got, expected_tensors(kDream, 1, {0}));

  EXPECT_EQ(f.get_string("general.architecture"), "dream");
  EXPECT_EQ(f.get_u32("dream.attention.head_count"), 28u);
  EXPECT_EQ(f.get_u32("dream.attention.head_count_kv"), 4u);
  EXPECT_EQ(f.get_f32("dream.rope.freq_base"), 1e6f);
  EXPECT_EQ(f.get_f32("dream.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_EQ(f.find("diffusion.shift_logits"), nullptr);  // absent: Dream shifts
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "qwen2");
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), 152064u);
  EXPECT_EQ(tokens[151643], "<|endoftext|>");
  EXPECT_EQ(tokens[151644], "<|im_start|>");
  EXPECT_EQ(tokens[151645], "<|im_end|>");
  EXPECT_EQ(tokens[151666], "<|mask|>");
  EXPECT_EQ(types[151645], 3);
  EXPECT_EQ(types[151659], 4);  // <|fim_prefix|> USER_DEFINED
  EXPECT_EQ(types[151667], 5);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.mask_token_id"), 151666u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 151643u);
  EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_bos_token"));
  const GgufFile ref = GgufFile::open(test::reference("tiny-dream-q4km.gguf").string());
  for (const KeyValue& kv : ref.metadata()) {
    const Value* v = f.find(kv.key);
    ASSERT_NE(v, nullptr) << "missing key " << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
  }
  check_tensor_data(f);
}

// LLaDA-MoE-7B-A1B and RND1 (Qwen3-30B-A3B): the MoE plans. Experts are 3-D [n_in, n_out, E]; with 64
// and 128 experts llama-quantize's 8-expert rules (Q8_0 attn_k / attn_v, Q5_K attn_output) do not
// apply, so the mix is the dense one with ffn_down_exps in the attn_v / ffn_down role.
struct MoeShape {
  int64_t n_embd, n_head, n_head_kv, head_dim, n_expert, n_ff_exp, n_vocab;
  bool tied;
};
const MoeShape kLladaMoe{2048, 16, 16, 128, 64, 1024, 157184, false};
const MoeShape kRnd1{2048, 32, 4, 128, 128, 768, 151936, false};

std::vector<Expected> expected_moe_tensors(const MoeShape& s, int n_layer, const std::set<int>& q6_layers) {
  const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim, E = s.n_expert, f = s.n_ff_exp;
  std::vector<Expected> e = {{"output.weight", "Q6_K", {s.n_embd, s.n_vocab}},
                             {"output_norm.weight", "F32", {s.n_embd}},
                             {"token_embd.weight", "Q4_K", {s.n_embd, s.n_vocab}}};
  for (int i = 0; i < n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const std::string mixed = q6_layers.count(i) ? "Q6_K" : "Q4_K";
    e.push_back({b + "attn_k.weight", "Q4_K", {s.n_embd, kv}});
    e.push_back({b + "attn_k_norm.weight", "F32", {s.head_dim}});
    e.push_back({b + "attn_norm.weight", "F32", {s.n_embd}});
    e.push_back({b + "attn_output.weight", "Q4_K", {q, s.n_embd}});
    e.push_back({b + "attn_q.weight", "Q4_K", {s.n_embd, q}});
    e.push_back({b + "attn_q_norm.weight", "F32", {s.head_dim}});
    e.push_back({b + "attn_v.weight", mixed, {s.n_embd, kv}});
    e.push_back({b + "ffn_down_exps.weight", mixed, {f, s.n_embd, E}});
    e.push_back({b + "ffn_gate_exps.weight", "Q4_K", {s.n_embd, f, E}});
    e.push_back({b + "ffn_gate_inp.weight", "F32", {s.n_embd, E}});
    e.push_back({b + "ffn_norm.weight", "F32", {s.n_embd}});
    e.push_back({b + "ffn_up_exps.weight", "Q4_K", {s.n_embd, f, E}});
  }
  return e;
}

// use_more_bits by hand for n = 16: n/8 = 2, 7n/8 = 14 -> 0-1, 14-15, and 4, 7, 10, 13;
// n = 48: n/8 = 6, 7n/8 = 42 -> 0-5, 42-47, and 8, 11, ..., 41.
const std::set<int> kMix16 = range(0, 1) + range(14, 15) + range(4, 13, 3);
const std::set<int> kMix48 = range(0, 5) + range(42, 47) + range(8, 41, 3);

TEST(SyntheticGguf, MoePlansFollowTheQ4KMMix) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  ToolRun r = run_tool("--arch llada-moe --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same(parse_dry_run(r.out), expected_moe_tensors(kLladaMoe, 16, kMix16));
  r = run_tool("--arch rnd1 --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same(parse_dry_run(r.out), expected_moe_tensors(kRnd1, 48, kMix48));
}

TEST(SyntheticGguf, LladaMoeOneLayer) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  test::TempDir dir;
  const std::string path = (dir / "llada-moe.gguf").string();
  const ToolRun r = run_tool("--arch llada-moe --layers 1 --out " + path);
  ASSERT_EQ(r.rc, 0) << r.out;
  const GgufFile f = GgufFile::open(path);
  std::vector<Expected> got;
  for (const TensorInfo& t : f.tensors())
    got.push_back({t.name, type_name(t.type), std::vector<int64_t>(t.ne, t.ne + t.n_dims)});
  expect_same(got, expected_moe_tensors(kLladaMoe, 1, {0}));

  EXPECT_EQ(f.get_string("general.architecture"), "llada-moe");
  EXPECT_EQ(f.get_u32("llada-moe.expert_count"), 64u);
  EXPECT_EQ(f.get_u32("llada-moe.expert_used_count"), 8u);
  EXPECT_EQ(f.get_u32("llada-moe.expert_feed_forward_length"), 1024u);
  EXPECT_EQ(f.get_f32("llada-moe.rope.freq_base"), 50000.0f);
  EXPECT_FALSE(f.get_bool("diffusion.shift_logits"));
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "llada-moe");
  EXPECT_EQ(f.get_u32("tokenizer.ggml.mask_token_id"), 156895u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 156892u);
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 157184u);
  EXPECT_EQ(tokens[156895], "<|mask|>");
  EXPECT_NE(f.get_string("tokenizer.chat_template").find("<|role_end|>"), std::string::npos);
  // Every key llama.cpp's own MoE file has (same names, same types).
  const GgufFile ref = GgufFile::open(test::reference("tiny-llada-moe-q4km.gguf").string());
  for (const KeyValue& kv : ref.metadata()) {
    if (kv.key == "tokenizer.ggml.eot_token_id" || kv.key == "tokenizer.ggml.add_eos_token") continue;
    const Value* v = f.find(kv.key);
    ASSERT_NE(v, nullptr) << "missing key " << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
  }
  check_tensor_data(f);
}

TEST(SyntheticGguf, Rnd1OneLayer) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  test::TempDir dir;
  const std::string path = (dir / "rnd1.gguf").string();
  const ToolRun r = run_tool("--arch rnd1 --layers 1 --out " + path);
  ASSERT_EQ(r.rc, 0) << r.out;
  const GgufFile f = GgufFile::open(path);
  std::vector<Expected> got;
  for (const TensorInfo& t : f.tensors())
    got.push_back({t.name, type_name(t.type), std::vector<int64_t>(t.ne, t.ne + t.n_dims)});
  expect_same(got, expected_moe_tensors(kRnd1, 1, {0}));
  EXPECT_EQ(f.get_u32("rnd1.attention.key_length"), 128u);
  EXPECT_EQ(f.get_u32("rnd1.attention.value_length"), 128u);
  EXPECT_EQ(f.get_u32("rnd1.attention.head_count_kv"), 4u);
  EXPECT_EQ(f.find("diffusion.shift_logits"), nullptr);  // absent: llama-diffusion-cli shifts
  EXPECT_EQ(f.get_u32("tokenizer.ggml.mask_token_id"), 151669u);
  EXPECT_EQ(f.find("tokenizer.chat_template"), nullptr);  // a base model
  const GgufFile ref = GgufFile::open(test::reference("tiny-rnd1-q4km.gguf").string());
  for (const KeyValue& kv : ref.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) continue;  // the tiny file carries LLaDA's tokenizer
    const Value* v = f.find(kv.key);
    ASSERT_NE(v, nullptr) << "missing key " << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
  }
  check_tensor_data(f);
}

// ---- LLaDA2.0-mini (llada2) and its bailingmoe2-labelled copy ---------------------------------------

// The layout of llama.cpp's bailingmoe2 / llada2 loader (src/llama-model.cpp): fused attn_qkv of
// n_embd x (q + 2 kv) rows, per-head q/k norms, a dense FFN on the first `dense` layers, then per MoE
// layer the router (F32), the selection bias exp_probs_b.bias (F32), 3-D experts and one shared expert.
struct Ling2Shape {
  int64_t n_embd, n_head, n_head_kv, head_dim, n_ff, n_expert, n_ff_exp, n_ff_shexp, n_vocab;
  int dense;
};
// LLaDA2.0-mini: dFactory configs/model_configs/llada2_mini/config.json (../shared/notes/block-diffusion.md).
const Ling2Shape kLlada2Mini{2048, 16, 4, 128, 5120, 256, 512, 512, 157184, 1};
// ../shared/reference/README.md "tiny-llada2" (its vocabulary is 50265; the synthetic tiny keeps Ling's).
const Ling2Shape kLlada2Tiny{256, 4, 2, 64, 512, 16, 256, 256, 157184, 1};

/// Tensors in llama-quantize order; `q6_layers` = layers whose attn_qkv and ffn_down* are Q6_K
/// (llama-quant.cpp: attn_qkv is attn_v-like; ffn_down* go by the layer in their name).
std::vector<Expected> expected_ling2_tensors(const Ling2Shape& s, int n_layer,
                                             const std::set<int>& q6_layers) {
  const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
  std::vector<Expected> e = {{"output.weight", "Q6_K", {s.n_embd, s.n_vocab}},
                             {"output_norm.weight", "F32", {s.n_embd}},
                             {"token_embd.weight", "Q4_K", {s.n_embd, s.n_vocab}}};
  for (int i = 0; i < n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const std::string mixed = q6_layers.count(i) ? "Q6_K" : "Q4_K";
    e.push_back({b + "attn_k_norm.weight", "F32", {s.head_dim}});
    e.push_back({b + "attn_norm.weight", "F32", {s.n_embd}});
    e.push_back({b + "attn_output.weight", "Q4_K", {q, s.n_embd}});
    e.push_back({b + "attn_q_norm.weight", "F32", {s.head_dim}});
    e.push_back({b + "attn_qkv.weight", mixed, {s.n_embd, q + 2 * kv}});
    if (i < s.dense) {
      e.push_back({b + "ffn_down.weight", mixed, {s.n_ff, s.n_embd}});
      e.push_back({b + "ffn_gate.weight", "Q4_K", {s.n_embd, s.n_ff}});
      e.push_back({b + "ffn_norm.weight", "F32", {s.n_embd}});
      e.push_back({b + "ffn_up.weight", "Q4_K", {s.n_embd, s.n_ff}});
      continue;
    }
    e.push_back({b + "exp_probs_b.bias", "F32", {s.n_expert}});
    e.push_back({b + "ffn_down_exps.weight", mixed, {s.n_ff_exp, s.n_embd, s.n_expert}});
    e.push_back({b + "ffn_down_shexp.weight", mixed, {s.n_ff_shexp, s.n_embd}});
    e.push_back({b + "ffn_gate_exps.weight", "Q4_K", {s.n_embd, s.n_ff_exp, s.n_expert}});
    e.push_back({b + "ffn_gate_inp.weight", "F32", {s.n_embd, s.n_expert}});
    e.push_back({b + "ffn_gate_shexp.weight", "Q4_K", {s.n_embd, s.n_ff_shexp}});
    e.push_back({b + "ffn_norm.weight", "F32", {s.n_embd}});
    e.push_back({b + "ffn_up_exps.weight", "Q4_K", {s.n_embd, s.n_ff_exp, s.n_expert}});
    e.push_back({b + "ffn_up_shexp.weight", "Q4_K", {s.n_embd, s.n_ff_shexp}});
  }
  return e;
}

// use_more_bits by hand for n = 20: n/8 = 2, 7n/8 = 17 -> 0-1, 17-19, and (i - 2) % 3 == 2: 4, 7, ..., 19;
// n = 4: n/8 = 0, 7n/8 = 3 -> 3, and i % 3 == 2: 2.
const std::set<int> kMix20 = range(0, 1) + range(17, 19) + range(4, 19, 3);
const std::set<int> kMix4 = {2, 3};

/// Runs the tool with `args --out DIR/NAME`; the file's path, or "" (and a test failure) when it failed.
std::string make_file(const test::TempDir& dir, const std::string& name, const std::string& args) {
  const std::string path = (dir / name).string();
  const ToolRun r = run_tool(args + " --out " + path);
  EXPECT_EQ(r.rc, 0) << r.out;
  return r.rc == 0 ? path : "";
}

std::vector<Expected> directory(const GgufFile& f) {
  std::vector<Expected> got;
  for (const TensorInfo& t : f.tensors())
    got.push_back({t.name, type_name(t.type), std::vector<int64_t>(t.ne, t.ne + t.n_dims)});
  return got;
}

TEST(SyntheticGguf, Llada2MiniPlanFollowsTheQ4KMMix) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  for (const char* arch : {"llada2", "bailingmoe2"}) {
    SCOPED_TRACE(arch);
    const ToolRun r = run_tool(std::string("--arch ") + arch + " --dry-run");
    ASSERT_EQ(r.rc, 0) << r.out;
    expect_same(parse_dry_run(r.out), expected_ling2_tensors(kLlada2Mini, 20, kMix20));
  }
  // The tiny shape has one MoE layer fewer than the reference's 4 with --layers 3: n = 3, n/8 = 0,
  // 7n/8 = 2 -> 2 (and i % 3 == 2: 2).
  const ToolRun r = run_tool("--arch llada2 --tiny --layers 3 --dry-run");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same(parse_dry_run(r.out), expected_ling2_tensors(kLlada2Tiny, 3, {2}));
}

/// Each key's value as text (scalars; arrays by length), for comparing two files' keys.
std::string value_text(const Value& v) {
  std::ostringstream o;
  switch (v.type) {
    case ValueType::STRING:
      return v.s;
    case ValueType::FLOAT32:
    case ValueType::FLOAT64:
      o << v.f;
      return o.str();
    case ValueType::INT8:
    case ValueType::INT16:
    case ValueType::INT32:
    case ValueType::INT64:
      return std::to_string(v.i);
    case ValueType::ARRAY:
      return "array[" + std::to_string(v.items.size()) + "]";
    default:
      return std::to_string(v.u);
  }
}

TEST(SyntheticGguf, Llada2TinyHasTheLayoutLlamaQuantizeWrote) {
  DLLM_REQUIRE_REFERENCE();
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  test::TempDir dir;
  const std::string path = make_file(dir, "llada2.gguf", "--arch llada2 --tiny --seed 3");
  ASSERT_FALSE(path.empty());
  const GgufFile f = GgufFile::open(path);
  expect_same(directory(f), expected_ling2_tensors(kLlada2Tiny, 4, kMix4));

  // The llama.cpp-made reference in this layout (llama-quantize Q4_K_M of a bailingmoe2 master,
  // relabelled llada2): the same directory but for the vocabulary rows, and every one of its keys
  // outside the tokenizer with the same type and value.
  const GgufFile ref = GgufFile::open(test::reference("tiny-llada2-q4km.gguf").string());
  std::vector<Expected> want = directory(ref);
  for (Expected& e : want)
    if (e.name == "output.weight" || e.name == "token_embd.weight") e.ne[1] = 157184;
  expect_same(directory(f), want);
  for (const KeyValue& kv : ref.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0 || kv.key == "general.name") continue;
    SCOPED_TRACE(kv.key);
    const Value* v = f.find(kv.key);
    ASSERT_NE(v, nullptr) << "missing key";
    EXPECT_EQ(v->type, kv.value.type);
    if (kv.key == "llada2.vocab_size") {
      EXPECT_EQ(v->u, 157184u);
    } else {
      EXPECT_EQ(value_text(*v), value_text(kv.value));
    }
  }
  // Ling's tokenizer, as in the LLaDA-MoE file: mask 156895, EOS 156892; the real files' pre-type.
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "bailingmoe2");
  EXPECT_EQ(f.get_u32("tokenizer.ggml.mask_token_id"), 156895u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 156892u);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")[156895], "<|mask|>");
  // The converter writes no attention.causal for Ling 2.0 (llama.cpp would run bailingmoe2
  // bidirectionally with `false`).
  EXPECT_EQ(f.find("llada2.attention.causal"), nullptr);
  check_tensor_data(f);
}

TEST(SyntheticGguf, Llada2FullSizeKeys) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  // One layer: the dense layer 0, so the file stays small (the vocabulary rows are most of it).
  test::TempDir dir;
  const std::string path = make_file(dir, "llada2.gguf", "--arch llada2 --layers 1");
  ASSERT_FALSE(path.empty());
  const GgufFile f = GgufFile::open(path);
  expect_same(directory(f), expected_ling2_tensors(kLlada2Mini, 1, {0}));
  // LLaDA2.0-mini's config.json values under the names convert_hf_to_gguf.py BailingMoeV2Model writes.
  EXPECT_EQ(f.get_string("general.architecture"), "llada2");
  EXPECT_EQ(f.get_u32("llada2.block_count"), 1u);
  EXPECT_EQ(f.get_u32("llada2.context_length"), 16384u);
  EXPECT_EQ(f.get_u32("llada2.embedding_length"), 2048u);
  EXPECT_EQ(f.get_u32("llada2.feed_forward_length"), 5120u);
  EXPECT_EQ(f.get_u32("llada2.attention.head_count"), 16u);
  EXPECT_EQ(f.get_u32("llada2.attention.head_count_kv"), 4u);
  EXPECT_EQ(f.get_u32("llada2.attention.key_length"), 128u);
  EXPECT_EQ(f.get_u32("llada2.attention.value_length"), 128u);
  EXPECT_EQ(f.get_u32("llada2.rope.dimension_count"), 64u);  // 128 x partial_rotary_factor 0.5
  EXPECT_EQ(f.get_f32("llada2.rope.freq_base"), 600000.0f);
  EXPECT_EQ(f.get_string("llada2.rope.scaling.type"), "none");
  EXPECT_EQ(f.get_f32("llada2.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_EQ(f.get_u32("llada2.leading_dense_block_count"), 1u);
  EXPECT_EQ(f.get_u32("llada2.vocab_size"), 157184u);
  EXPECT_EQ(f.get_u32("llada2.expert_count"), 256u);
  EXPECT_EQ(f.get_u32("llada2.expert_used_count"), 8u);
  EXPECT_EQ(f.get_u32("llada2.expert_group_count"), 8u);
  EXPECT_EQ(f.get_u32("llada2.expert_group_used_count"), 4u);
  EXPECT_EQ(f.get_u32("llada2.expert_feed_forward_length"), 512u);
  EXPECT_EQ(f.get_u32("llada2.expert_shared_feed_forward_length"), 512u);
  EXPECT_EQ(f.get_u32("llada2.expert_shared_count"), 1u);
  EXPECT_EQ(f.get_f32("llada2.expert_weights_scale"), 2.5f);
  EXPECT_TRUE(f.get_bool("llada2.expert_weights_norm"));
  EXPECT_EQ(f.get_u32("llada2.expert_gating_func"), 2u);  // sigmoid
  EXPECT_FALSE(f.get_bool("diffusion.shift_logits"));
  EXPECT_EQ(f.get_u32("general.file_type"), 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 157184u);
}

TEST(SyntheticGguf, Bailingmoe2CopyHoldsTheSameTensorBytes) {
  if (!kTool) GTEST_SKIP() << "tools/ not configured";
  test::TempDir dir;
  const std::string a = make_file(dir, "llada2.gguf", "--arch llada2 --tiny --seed 5");
  const std::string b = make_file(dir, "bailingmoe2.gguf", "--arch bailingmoe2 --tiny --seed 5");
  ASSERT_FALSE(a.empty() || b.empty());
  const GgufFile fa = GgufFile::open(a), fb = GgufFile::open(b);
  EXPECT_EQ(fb.get_string("general.architecture"), "bailingmoe2");
  ASSERT_EQ(fa.tensors().size(), fb.tensors().size());
  for (size_t k = 0; k < fa.tensors().size(); ++k) {
    const TensorInfo &ta = fa.tensors()[k], &tb = fb.tensors()[k];
    ASSERT_EQ(ta.name, tb.name);
    ASSERT_EQ(ta.type, tb.type) << ta.name;
    ASSERT_EQ(ta.n_bytes, tb.n_bytes) << ta.name;
    EXPECT_EQ(std::memcmp(fa.tensor_data(ta), fb.tensor_data(tb), ta.n_bytes), 0) << ta.name;
  }
  // Every llada2.* key is there as bailingmoe2.* with the same value; the rest are the same but for
  // the architecture and the diffusion key, which the autoregressive label has none of.
  size_t n_arch_keys = 0;
  for (const KeyValue& kv : fa.metadata()) {
    SCOPED_TRACE(kv.key);
    if (kv.key == "general.architecture") continue;
    if (kv.key == "diffusion.shift_logits") {
      EXPECT_EQ(fb.find(kv.key), nullptr);
      continue;
    }
    std::string key = kv.key;
    if (key.rfind("llada2.", 0) == 0) {
      key = "bailingmoe2." + key.substr(7);
      ++n_arch_keys;
    }
    const Value* v = fb.find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->type, kv.value.type);
    EXPECT_EQ(value_text(*v), value_text(kv.value));
  }
  EXPECT_EQ(fa.metadata().size(), fb.metadata().size() + 1);
  EXPECT_GE(n_arch_keys, 20u);
}

}  // namespace
}  // namespace dllm::gguf
