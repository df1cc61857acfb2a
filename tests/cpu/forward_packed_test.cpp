// CpuForward::forward over many segments (the batching engine's pass: sequences of different lengths
// and kinds in one pass) against each request run alone on another CpuForward object (its own
// buffers, another thread count), on the tiny LLaDA and Dream reference models: logits and K/V states
// bit for bit, whatever else is in the pass and in whatever order (padding, statistics over the batch
// or a shared scratch would show here: Fast-dLLM #39/#57).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "cpu/forward.h"
#include "forward/pass.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "test_util.h"

namespace dllm {
namespace {

using cpu::CpuForward;
using cpu::ForwardOptions;
using forward::KvState;
using forward::Segment;

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

/// One request (a sequence's step: its segments) and what it gives alone.
struct Req {
  std::vector<int32_t> tokens;  // n_seq x n: n_seq = 2 is a CFG pair, two segments
  int64_t n_seq = 1;
  std::vector<int32_t> rows;
  bool cached = false, refresh = false;
  int64_t wb = 0, we = 0;
  KvState cache_alone, cache_packed;
  std::vector<float> alone, packed;

  /// The request's segments writing into `out` over `kv` (Fast-dLLM's step as diffusion::Sequence
  /// sends it: a refresh clears the state and runs the canvas, a window step runs [wb, we)).
  std::vector<Segment> segments(std::vector<float>& out, KvState& kv, int64_t n_vocab) {
    std::vector<Segment> segs;
    const int64_t n = static_cast<int64_t>(tokens.size()) / n_seq;
    for (int64_t i = 0; i < n_seq; ++i) {
      Segment s;
      s.tokens = std::span<const int32_t>(tokens).subspan(i * n, n);
      s.logit_rows = rows;
      s.logits = out.data() + i * rows.size() * n_vocab;
      if (cached) {
        s.kv = &kv;
        if (refresh) {
          kv.clear();
        } else {
          s.tokens = s.tokens.subspan(wb, we - wb);
          s.first = wb;
        }
      }
      segs.push_back(s);
    }
    return segs;
  }
};

/// The rows a state holds, K (or V) of every layer one after another.
std::vector<float> held(const KvState& kv, bool values) {
  const auto& s = static_cast<const cpu::KvStorage&>(*kv.storage());
  std::vector<float> out;
  for (const auto& layer : values ? s.v : s.k)
    out.insert(out.end(), layer.begin(), layer.begin() + kv.rows() * s.width);
  return out;
}

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
    alone_->forward(r.segments(r.alone, r.cache_alone, n_vocab_));
  }

  void run_packed(std::vector<Req*> reqs) {
    std::vector<Segment> segs;
    for (Req* r : reqs) {
      r->packed.assign(r->n_seq * r->rows.size() * n_vocab_, -1.0f);
      for (const Segment& s : r->segments(r->packed, r->cache_packed, n_vocab_)) segs.push_back(s);
    }
    packed_->forward(segs);
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
  EXPECT_TRUE(same_bits(held(dual.cache_alone, false), held(dual.cache_packed, false)));
  EXPECT_TRUE(same_bits(held(prefix.cache_alone, true), held(prefix.cache_packed, true)));

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
  EXPECT_TRUE(same_bits(held(prefix.cache_alone, false), held(prefix.cache_packed, false)));
}

TEST_P(ForwardPacked, InputsAreCheckedBeforeAnyCompute) {
  Req a, b;
  a.tokens = tokens_of(96, 1, n_vocab_);
  a.rows = {0};
  b.tokens = a.tokens;
  b.rows = a.rows;
  std::vector<Req*> many{&a, &b, &a, &b, &a, &b, &a};  // 7 x 96 rows > 6 x 96
  test::expect_error([&] { run_packed(many); },
                     "forward: 672 activation rows, at most 576 (max_batch x max_tokens)");
  a.cached = b.cached = true;
  a.refresh = b.refresh = false;
  a.wb = 8, a.we = 16;
  a.rows = {8};
  test::expect_error(
      [&] { run_packed({&a}); },
      "forward: the K/V state holds 0 positions, the segment starts at 8: run a refresh step first "
      "(the keys between would be missing)");
  std::vector<Segment> twice(2);
  for (auto& s : twice) {
    s.tokens = a.tokens;
    s.logit_rows = a.rows;
    s.kv = &a.cache_packed;
    s.logits = nullptr;
  }
  test::expect_error([&] { packed_->forward(twice); }, "forward: segments 0 and 1 use the same K/V state");
  // A state another CpuForward filled is refused.
  a.refresh = true;
  run_alone(a);
  twice.resize(1);
  twice[0].kv = &a.cache_alone;
  test::expect_error(
      [&] { packed_->forward(twice); },
      "forward: segment 0's K/V state was filled by another forward pass (a state belongs to one "
      "model and device)");
  test::expect_error([&] { packed_->forward({}); }, "forward: no segments");
}

INSTANTIATE_TEST_SUITE_P(Tiny, ForwardPacked,
                         ::testing::Values(std::string("tiny-llada-q4km.gguf"),
                                           std::string("tiny-dream-q4km.gguf")),
                         [](const auto& info) {
                           return info.param.find("dream") != std::string::npos ? "Dream" : "Llada";
                         });

}  // namespace
}  // namespace dllm
