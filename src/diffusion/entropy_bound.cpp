// The entropy-bound sampler (entropy_bound.h).
#include "diffusion/entropy_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.h"
#include "diffusion/entropy_bound_simd.h"

namespace dllm::diffusion {

int32_t EbRng::token(int64_t n_vocab) {
  // libstdc++ uniform_int_distribution, the 32-bit "downscaling" branch (Lemire's method).
  const auto range = static_cast<uint64_t>(n_vocab);
  uint64_t product = static_cast<uint64_t>(g_()) * range;
  auto low = static_cast<uint32_t>(product);
  if (low < range) {
    const auto threshold = static_cast<uint32_t>((0x100000000ull - range) % range);
    while (low < threshold) {
      product = static_cast<uint64_t>(g_()) * range;
      low = static_cast<uint32_t>(product);
    }
  }
  return static_cast<int32_t>(product >> 32);
}

float EbRng::uniform() {
  // libstdc++ generate_canonical<float, 24>: one 32-bit draw, x / 2^32 in float, clamped below 1.
  const float r = static_cast<float>(g_()) / 4294967296.0f;
  return r >= 1.0f ? std::nextafter(1.0f, 0.0f) : r;
}

float eb_temperature(const EntropyBoundParams& p, int64_t cur_step) {
  return p.t_min + (p.t_max - p.t_min) * (static_cast<float>(cur_step) / static_cast<float>(p.max_steps));
}

void eb_rows(const float* const* rows, int k, int64_t n_vocab, float temp_inv, const float* u, EbRow* out,
             Isa isa) {
  if (k < 1 || k > kEbRowsAtOnce) throw Error("eb_rows: " + std::to_string(k) + " rows at once");
  const bool avx512 = vector_isa(isa) == Isa::kAvx512Vnni;
  // Each row's float operations are eb_row's, in its order; the rows' serial sums (max, Z, the
  // cumulative sum, H) are interleaved so that their adds' latencies overlap.
  float m[kEbRowsAtOnce], Z[kEbRowsAtOnce], target[kEbRowsAtOnce], cum[kEbRowsAtOnce], H[kEbRowsAtOnce];
  for (int r = 0; r < k; ++r) {
    m[r] = -INFINITY;
    out[r] = EbRow{};
  }
  for (int64_t v = 0; v < n_vocab; ++v) {
    for (int r = 0; r < k; ++r) {
      const float z = rows[r][v] * temp_inv;
      if (z > m[r]) {
        m[r] = z;
        out[r].argmax = static_cast<int32_t>(v);
      }
    }
  }
  // e_v = exp(z_v - m) once per id (the PR computes it twice), Z summed in id order in float as there.
  thread_local std::vector<float> e, t;
  e.resize(static_cast<size_t>(k * n_vocab));
  for (int r = 0; r < k; ++r) Z[r] = 0.0f;
  // The vector passes go a chunk of ids at a time, so the sums read their values from L1.
  constexpr int64_t kChunk = 2048;
  if (avx512) {
    for (int64_t c0 = 0; c0 < n_vocab; c0 += kChunk) {
      const int64_t c1 = std::min(n_vocab, c0 + kChunk);
      for (int r = 0; r < k; ++r) eb_exp_avx512(rows[r] + c0, c1 - c0, temp_inv, m[r], &e[r * n_vocab + c0]);
      for (int64_t v = c0; v < c1; ++v)
        for (int r = 0; r < k; ++r) Z[r] += e[r * n_vocab + v];
    }
  } else {
    for (int64_t v = 0; v < n_vocab; ++v) {
      for (int r = 0; r < k; ++r) Z[r] += e[r * n_vocab + v] = std::exp(rows[r][v] * temp_inv - m[r]);
    }
  }
  int active = 0;
  for (int r = 0; r < k; ++r) {
    target[r] = u[r] * Z[r];
    cum[r] = 0.0f;
    out[r].sampled = -1;
    ++active;
  }
  for (int64_t v = 0; v < n_vocab && active > 0; ++v) {
    for (int r = 0; r < k; ++r) {
      if (out[r].sampled >= 0) continue;
      cum[r] += e[r * n_vocab + v];
      if (cum[r] >= target[r]) {
        out[r].sampled = static_cast<int32_t>(v);
        --active;
      }
    }
  }
  for (int r = 0; r < k; ++r)
    if (out[r].sampled < 0) out[r].sampled = static_cast<int32_t>(n_vocab - 1);
  // H = -sum p log p in float, id by id, as the PR computes it (the recorded entropies are its float
  // rounding: an exact sum differs from them by about 1e-6).
  for (int r = 0; r < k; ++r) H[r] = 0.0f;
  if (avx512) {
    // p overwrites e; t = p log p, a chunk per row.
    t.resize(static_cast<size_t>(k * kChunk));
    for (int64_t c0 = 0; c0 < n_vocab; c0 += kChunk) {
      const int64_t c1 = std::min(n_vocab, c0 + kChunk);
      for (int r = 0; r < k; ++r)
        eb_plogp_avx512(&e[r * n_vocab + c0], c1 - c0, Z[r], &e[r * n_vocab + c0], &t[r * kChunk]);
      for (int64_t v = c0; v < c1; ++v) {
        for (int r = 0; r < k; ++r)
          if (e[r * n_vocab + v] > 0.0f) H[r] -= t[r * kChunk + (v - c0)];
      }
    }
  } else {
    for (int64_t v = 0; v < n_vocab; ++v) {
      for (int r = 0; r < k; ++r) {
        const float p = e[r * n_vocab + v] / Z[r];
        if (p > 0.0f) H[r] -= p * std::log(p);
      }
    }
  }
  for (int r = 0; r < k; ++r) out[r].entropy = H[r];
}

EbRow eb_row(const float* row, int64_t n_vocab, float temp_inv, float u, Isa isa) {
  EbRow r;
  eb_rows(&row, 1, n_vocab, temp_inv, &u, &r, isa);
  return r;
}

std::vector<char> eb_accept(std::span<const float> entropy, double bound) {
  const auto C = static_cast<int32_t>(entropy.size());
  std::vector<int32_t> order(static_cast<size_t>(C));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return entropy[a] < entropy[b]; });
  std::vector<char> accepted(static_cast<size_t>(C), 0);
  double cum = 0.0;
  for (const int32_t pos : order) {
    cum += entropy[pos];
    if (cum - entropy[pos] <= bound) accepted[pos] = 1;
  }
  return accepted;
}

int64_t eb_trim(std::span<const int32_t> canvas, std::span<const int32_t> end_ids) {
  const size_t n = canvas.size();
  size_t cut = n;
  for (size_t i = 0; i < n; ++i) {
    if (std::find(end_ids.begin(), end_ids.end(), canvas[i]) != end_ids.end()) {
      cut = i;
      break;
    }
  }
  for (size_t i = 0; i + 1 < cut; ++i) {
    bool loop = false;
    for (size_t stride = 1; stride <= 2 && !loop; ++stride) {
      size_t reps = 0;
      for (size_t j = i; j + stride < n && canvas[j] == canvas[j + stride]; j += stride) ++reps;
      loop = reps >= 6;
    }
    if (loop) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(cut);
}

EntropyBoundSequence::EntropyBoundSequence(std::span<const int32_t> prompt, const EntropyBoundParams& p,
                                           int64_t n_vocab, int64_t n_vocab_draw,
                                           std::function<void(const EbStepInfo&)> on_step)
    : p_(p),
      n_vocab_(n_vocab),
      n_vocab_draw_(n_vocab_draw),
      on_step_(std::move(on_step)),
      prefix_(prompt.begin(), prompt.end()) {
  if (p.canvas_length <= 0 || p.max_steps <= 0 || p.max_tokens <= 0)
    throw UsageError("canvas length, steps and max tokens must be positive");
  if (!(p.t_min > 0.0f) || !(p.t_max > 0.0f) || !std::isfinite(p.t_min) || !std::isfinite(p.t_max)) {
    char m[128];
    std::snprintf(m, sizeof m,
                  "the entropy-bound temperatures (t_min %g, t_max %g) must be positive and finite",
                  static_cast<double>(p.t_min), static_cast<double>(p.t_max));
    throw UsageError(m);
  }
  if (!(p.entropy_bound >= 0.0f) || !(p.confidence >= 0.0f) || p.stability < 0)
    throw UsageError("the entropy bound, the confidence threshold and the stability count must be >= 0");
  if (prefix_.empty()) throw UsageError("the prompt is empty: DiffusionGemma needs at least one token");
  if (!isa_supported(p.isa))
    throw UsageError(std::string("the entropy-bound sampler's path ") + isa_name(p.isa) +
                     " is not one this CPU runs");
  const auto C = static_cast<size_t>(p.canvas_length);
  logits_.resize(C * static_cast<size_t>(n_vocab));
  for (int64_t i = 0; i < p.canvas_length; ++i) rows_.push_back(0);
  // The prompt's causal encoding first.
  encoding_ = true;
}

void EntropyBoundSequence::start_block() {
  const auto C = static_cast<size_t>(p_.canvas_length);
  rng_ = std::make_unique<EbRng>(p_.seed);  // re-created per block (local to the PR's function)
  canvas_.resize(C);
  for (auto& t : canvas_) t = rng_->token(n_vocab_draw_);
  prev_argmax_.assign(C, -1);
  argmax_.assign(C, 0);
  sampled_.assign(C, 0);
  renoise_.assign(C, 0);
  entropy_.assign(C, 0.0f);
  u_.assign(C, 0.0f);
  cur_step_ = p_.max_steps;
  held_ = 0;
  have_prev_ = false;
  prev_temp_inv_ = 1.0f;
  for (size_t i = 0; i < C; ++i) rows_[i] = static_cast<int32_t>(encoded_ + static_cast<int64_t>(i));
}

std::span<const forward::Segment> EntropyBoundSequence::next() const {
  if (done_) throw Error("entropy-bound sequence: no step left");
  seg_ = forward::Segment{};
  seg_.kv = &kv_;
  if (encoding_) {
    // The prefix not yet in K/V (the prompt, or the block just finished), causally.
    enc_tokens_.assign(prefix_.begin() + encoded_, prefix_.end());
    seg_.tokens = enc_tokens_;
    seg_.first = encoded_;
    seg_.mask = forward::MaskRule::causal();
    return {&seg_, 1};
  }
  seg_.tokens = canvas_;
  seg_.first = encoded_;
  seg_.mask = forward::MaskRule::causal_prompt(encoded_);
  seg_.logit_rows = rows_;
  seg_.logits = logits_.data();
  if (have_prev_) {
    // The previous step's logits are read in place: the pass reads them before it writes its own.
    seg_.self_cond = logits_;
    seg_.self_cond_scale = prev_temp_inv_;
  }
  return {&seg_, 1};
}

void EntropyBoundSequence::accept() {
  if (done_) throw Error("entropy-bound sequence: no step left");
  if (encoding_) {
    encoding_ = false;
    encoded_ = static_cast<int64_t>(prefix_.size());
    start_block();
    return;
  }
  const int64_t C = p_.canvas_length, V = n_vocab_;
  const float t = eb_temperature(p_, cur_step_), temp_inv = 1.0f / t;
  for (int64_t i = 0; i < C; ++i) {
    u_[i] = rng_->uniform();
    renoise_[i] = rng_->token(n_vocab_draw_);
  }
  const std::vector<int32_t> input = canvas_;
#pragma omp parallel for schedule(static)
  for (int64_t i0 = 0; i0 < C; i0 += kEbRowsAtOnce) {
    const int k = static_cast<int>(std::min<int64_t>(kEbRowsAtOnce, C - i0));
    const float* rows[kEbRowsAtOnce];
    EbRow r[kEbRowsAtOnce];
    for (int j = 0; j < k; ++j) rows[j] = &logits_[static_cast<size_t>((i0 + j) * V)];
    eb_rows(rows, k, V, temp_inv, &u_[i0], r, p_.isa);
    for (int j = 0; j < k; ++j) {
      argmax_[i0 + j] = r[j].argmax;
      sampled_[i0 + j] = r[j].sampled;
      entropy_[i0 + j] = r[j].entropy;
    }
  }
  const std::vector<char> accepted = eb_accept(entropy_, p_.entropy_bound);
  float entropy_sum = 0.0f;
  for (int64_t i = 0; i < C; ++i) {
    canvas_[i] = accepted[i] ? sampled_[i] : renoise_[i];
    entropy_sum += entropy_[i];
  }
  held_ = prev_argmax_ == argmax_ ? held_ + 1 : 0;
  const float mean = entropy_sum / static_cast<float>(C);
  const bool stop = held_ >= p_.stability && mean < p_.confidence;
  ++steps_run_;
  if (on_step_) {
    EbStepInfo info;
    info.block = block_;
    info.step = p_.max_steps - cur_step_;
    info.cur_step = cur_step_;
    info.t = t;
    info.input_canvas = input;
    info.argmax = argmax_;
    info.sampled = sampled_;
    info.renoise = renoise_;
    info.entropy = entropy_;
    info.u = u_;
    info.accepted = accepted;
    info.mean_entropy = mean;
    info.stop = stop;
    on_step_(info);
  }
  prev_argmax_ = argmax_;
  prev_temp_inv_ = temp_inv;
  have_prev_ = true;
  --cur_step_;
  if (!stop && cur_step_ >= 1) return;
  // The block is finished: its argmax canvas, cut.
  const int64_t cut = eb_trim(argmax_, p_.end_ids);
  result_.argmax.push_back(argmax_);
  result_.cut.push_back(cut);
  result_.steps.push_back(p_.max_steps - cur_step_);
  result_.answer.insert(result_.answer.end(), argmax_.begin(), argmax_.begin() + cut);
  if (static_cast<int64_t>(result_.answer.size()) > p_.max_tokens) result_.answer.resize(p_.max_tokens);
  ++block_;
  const int64_t n_blocks = (p_.max_tokens + C - 1) / C;
  if (cut < C || block_ >= n_blocks) {
    done_ = true;
    return;
  }
  prefix_.insert(prefix_.end(), argmax_.begin(), argmax_.begin() + cut);
  encoding_ = true;
}

EbResult generate_entropy_bound(forward::Forward& model, std::span<const int32_t> prompt,
                                const EntropyBoundParams& p, int64_t n_vocab_draw,
                                const std::function<void(const EbStepInfo&)>& on_step) {
  EntropyBoundSequence s(prompt, p, model.n_vocab(), n_vocab_draw, on_step);
  while (!s.done()) {
    model.forward(s.next());
    s.accept();
  }
  return s.result();
}

}  // namespace dllm::diffusion
