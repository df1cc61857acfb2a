// CpuForward::forward_packed (the batching engine's pass: requests of different lengths and kinds
// in one pass) against each request run alone through forward_batch / forward_window on another
// CpuForward object (its own buffers, another thread count), on the tiny LLaDA and Dream reference
// models: logits and KV caches bit for bit, whatever else is in the pass and in whatever order
// (padding, statistics over the batch or a shared scratch would show here: Fast-dLLM #39/#57).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "cpu/forward.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "test_util.h"

namespace dllm {
namespace {

using cpu::CpuForward;
using cpu::ForwardOptions;
using cpu::KvCache;
using cpu::PackedSeq;

struct Loaded {
  gguf::GgufFile file;
  model::Model model;
  explicit Loaded(const std::string& name)
      : file(gguf::GgufFile::open(test::reference(name).string())), model(model::Model::load(file)) {}
};

std::vector<int32_t> tokens_of(int64_t n, uint32_t seed, int64_t n_vocab) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = d(g);
  return t;
}

std::vector<int32_t> range(int64_t b, int64_t e) {
  std::vector<int32_t> r;
  for (int64_t i = b; i < e; ++i) r.push_back(static_cast<int32_t>(i));
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// One request and what it gives alone.
struct Req {
  std::vector<int32_t> tokens;  // n_seq x n
  int64_t n_seq = 1;
  std::vector<int32_t> rows;
  bool cached = false, refresh = false;
  int64_t wb = 0, we = 0;
  KvCache cache_alone, cache_packed;
  std::vector<float> alone, packed;
};

class ForwardPacked : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    m_ = std::make_unique<Loaded>(GetParam());
    ForwardOptions a;
    a.max_tokens = 96;
    a.max_batch = 2;
    a.n_threads = 1;
    alone_ = std::make_unique<CpuForward>(m_->model, a);
    ForwardOptions p = a;
    p.max_batch = 6;
    p.n_threads = 2;
    packed_ = std::make_unique<CpuForward>(m_->model, p);
    n_vocab_ = alone_->n_vocab();
  }

  void run_alone(Req& r) {
    r.alone.assign(r.n_seq * r.rows.size() * n_vocab_, 0.0f);
    if (r.cached)
      alone_->forward_window(r.tokens, r.wb, r.we, r.rows, r.alone.data(), r.cache_alone, r.refresh);
    else
      alone_->forward_batch(r.tokens, r.n_seq, r.rows, r.alone.data());
  }

  void run_packed(std::vector<Req*> reqs) {
    std::vector<PackedSeq> seqs;
    for (Req* r : reqs) {
      r->packed.assign(r->n_seq * r->rows.size() * n_vocab_, -1.0f);
      PackedSeq s;
      s.tokens = r->tokens;
      s.n_seq = r->n_seq;
      s.rows = r->rows;
      s.logits = r->packed.data();
      if (r->cached) {
        s.cache = &r->cache_packed;
        s.refresh = r->refresh;
        s.window_begin = r->wb;
        s.window_end = r->we;
      }
      seqs.push_back(s);
    }
    packed_->forward_packed(seqs);
  }

  std::unique_ptr<Loaded> m_;
  std::unique_ptr<CpuForward> alone_, packed_;
  int64_t n_vocab_ = 0;
};

TEST_P(ForwardPacked, MixedLengthsAndACfgPairEqualEachAlone) {
  Req a, b, c, pair;
  a.tokens = tokens_of(40, 1, n_vocab_);
  a.rows = range(8, 40);
  b.tokens = tokens_of(57, 2, n_vocab_);
  b.rows = {0, 13, 56};
  c.tokens = tokens_of(9, 3, n_vocab_);
  c.rows = range(0, 9);
  pair.tokens = tokens_of(2 * 33, 4, n_vocab_);
  pair.n_seq = 2;
  pair.rows = range(1, 33);
  for (Req* r : {&a, &b, &c, &pair}) run_alone(*r);
  run_packed({&a, &b, &c, &pair});
  for (Req* r : {&a, &b, &c, &pair})
    EXPECT_TRUE(same_bits(r->alone, r->packed)) << r->tokens.size() << " tokens";
  // Another order and another company: the same bits.
  run_packed({&pair, &c, &a});
  for (Req* r : {&a, &c, &pair}) EXPECT_TRUE(same_bits(r->alone, r->packed)) << r->tokens.size() << " tokens";
  run_packed({&b});
  EXPECT_TRUE(same_bits(b.alone, b.packed));
}

TEST_P(ForwardPacked, CacheRefreshAndWindowStepsEqualEachAlone) {
  // Two cached canvases (a dual window and a prefix window) beside a full forward, over two steps: the
  // refresh (packed with a full pass), then window steps after tokens changed (so the cached K/V
  // are stale and the window's logits are the approximation, which must still match alone).
  Req dual, prefix, full;
  dual.tokens = tokens_of(64, 5, n_vocab_);
  dual.cached = prefix.cached = true;
  dual.refresh = prefix.refresh = true;
  dual.rows = range(16, 48);
  prefix.tokens = tokens_of(80, 6, n_vocab_);
  prefix.rows = range(16, 48);
  full.tokens = tokens_of(50, 7, n_vocab_);
  full.rows = range(18, 50);
  for (Req* r : {&dual, &prefix, &full}) run_alone(*r);
  run_packed({&full, &dual, &prefix});
  for (Req* r : {&dual, &prefix, &full}) EXPECT_TRUE(same_bits(r->alone, r->packed)) << r->tokens.size();
  EXPECT_TRUE(same_bits(dual.cache_alone.k, dual.cache_packed.k));
  EXPECT_TRUE(same_bits(prefix.cache_alone.v, prefix.cache_packed.v));

  dual.refresh = prefix.refresh = false;
  dual.tokens[20] = dual.tokens[21] = 7;  // inside the window
  dual.tokens[50] = 9;                    // outside: stale in the cache
  prefix.tokens[30] = 11;
  dual.wb = 16, dual.we = 48;
  dual.rows = {16, 20, 21, 47};
  prefix.wb = 16, prefix.we = 80;
  prefix.rows = range(16, 48);
  full.tokens[3] = 5;
  for (Req* r : {&dual, &prefix, &full}) run_alone(*r);
  run_packed({&dual, &full, &prefix});
  for (Req* r : {&dual, &prefix, &full}) EXPECT_TRUE(same_bits(r->alone, r->packed)) << r->tokens.size();
  EXPECT_TRUE(same_bits(prefix.cache_alone.k, prefix.cache_packed.k));
}

TEST_P(ForwardPacked, InputsAreCheckedBeforeAnyCompute) {
  Req a, b;
  a.tokens = tokens_of(96, 1, n_vocab_);
  a.rows = {0};
  b = a;
  std::vector<Req*> many{&a, &b, &a, &b, &a, &b, &a};  // 7 x 96 rows > 6 x 96
  test::expect_error([&] { run_packed(many); },
                     "forward_packed: 672 activation rows, at most 576 (max_batch x max_tokens)");
  a.cached = b.cached = true;
  a.refresh = b.refresh = false;
  a.wb = 0, a.we = 8;
  test::expect_error(
      [&] { run_packed({&a}); },
      "forward_window: the KV cache holds 0 positions, the canvas has 96: run a refresh step first");
  a.refresh = true;
  std::vector<PackedSeq> twice(2);
  for (auto& s : twice) {
    s.tokens = a.tokens;
    s.rows = a.rows;
    s.cache = &a.cache_packed;
    s.refresh = true;
    s.logits = nullptr;
  }
  test::expect_error([&] { packed_->forward_packed(twice); },
                     "forward_packed: requests 0 and 1 use the same KV cache");
  test::expect_error([&] { packed_->forward_packed({}); }, "forward_packed: no sequences");
}

INSTANTIATE_TEST_SUITE_P(Tiny, ForwardPacked,
                         ::testing::Values(std::string("tiny-llada-q4km.gguf"),
                                           std::string("tiny-dream-q4km.gguf")),
                         [](const auto& info) {
                           return info.param.find("dream") != std::string::npos ? "Dream" : "Llada";
                         });

}  // namespace
}  // namespace dllm
