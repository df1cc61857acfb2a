// The denoising loops, as a resumable Sequence (sampler.h): one State per generation holds the
// mutable state (canvas, logits buffers, the loop's cursor); generate() drives one Sequence over a
// forward::Forward, the engine (src/engine) many over one batched forward pass.
#include "diffusion/sampler.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.h"
#include "diffusion/kv_policy.h"
#include "diffusion/loop.h"
#include "diffusion/rng.h"
#include "diffusion/row_ops.h"

namespace dllm::diffusion {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string num(int64_t v) {
  return std::to_string(v);
}

/// Multiples of `unit` nearest to `value` (the one below when positive, and the one above), "a or b".
std::string nearest_multiples(int64_t value, int64_t unit) {
  const int64_t below = value / unit * unit;
  const int64_t above = below + unit;
  if (below > 0 && below != value) return num(below) + " or " + num(above);
  return num(above);
}

/// Divisors of n, at most `limit` of them, those nearest to `near` first, listed increasing.
std::string divisors_near(int64_t n, int64_t near, size_t limit) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end(), [&](int64_t a, int64_t b) {
    const int64_t da = std::abs(a - near), db = std::abs(b - near);
    return da < db || (da == db && a < b);
  });
  if (d.size() > limit) d.resize(limit);
  std::sort(d.begin(), d.end());
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + num(d[i]);
  return s;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Dream (non-origin) reveal counts for the whole run: masks left drop by exactly the count each step.
std::vector<int64_t> dream_counts(int64_t max_tokens, int64_t steps, double eps) {
  const std::vector<float> ts = dream_timesteps(steps, eps);
  std::vector<int64_t> counts;
  int64_t left = max_tokens;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t k = std::min(left, dream_transfer_count(left, i, ts));
    counts.push_back(k);
    left -= k;
  }
  return counts;
}

struct Candidate {
  int32_t pos = 0;
  int32_t token = 0;
  double conf = 0.0;
};

/// Higher confidence first; equal confidences in position order (torch.topk leaves ties unspecified).
bool more_confident(const Candidate& a, const Candidate& b) {
  return a.conf > b.conf || (a.conf == b.conf && a.pos < b.pos);
}

}  // namespace

/// The mutable state of one generation: canvas, logits buffers, its loop (loop.h: which step runs
/// next) and its K/V policy (kv_policy.h: what that step forwards). advance() asks the loop for the
/// next step needing a forward pass, so the caller runs the forward pass in between.
class Sequence::State {
 public:
  State(std::span<const int32_t> prompt, const SamplerParams& p, int64_t n_vocab, SamplerCallbacks cb)
      : p_(p), cb_(std::move(cb)), n_vocab_(n_vocab) {
    result_.warnings = check_params(p_, static_cast<int64_t>(prompt.size()), n_vocab_);
    for (const auto& w : result_.warnings)
      if (cb_.on_warning) cb_.on_warning(w);
    prompt_len_ = static_cast<int64_t>(prompt.size());
    canvas_.assign(prompt.begin(), prompt.end());
    canvas_.resize(static_cast<size_t>(canvas_length(p_, prompt_len_)), p_.mask_id);
    answer_end_ = prompt_len_ + p_.max_tokens;
    masks_left_ = static_cast<int64_t>(canvas_.size()) - prompt_len_;
    allowed_.assign(static_cast<size_t>(n_vocab_), 1);
    if (!p_.sampleable.empty())
      for (int64_t id = 0; id < n_vocab_; ++id)
        allowed_[id] = id < static_cast<int64_t>(p_.sampleable.size()) && p_.sampleable[id];
    allowed_[p_.mask_id] = 0;
    is_end_.assign(static_cast<size_t>(n_vocab_), 0);
    for (int32_t e : p_.end_ids)
      if (e >= 0 && e < n_vocab_) is_end_[e] = 1;
    n_threads_ = p_.n_threads > 0 ? p_.n_threads : omp_get_max_threads();
    result_.steps_planned = diffusion::planned_steps(p_, prompt_len_);
    // Sizing the logits buffers for the first step here keeps their allocation and first touch (tens
    // of MB, up to ~0.2 s on a VM) out of that step's time, as llama.cpp allocates its output buffer
    // with the context.
    const size_t first_need = static_cast<size_t>(first_step_rows()) * static_cast<size_t>(n_vocab_);
    logits_.resize(first_need);
    if (p_.cfg_scale > 0) pair_.resize(2 * first_need);
    loop_ = make_loop(p_, prompt_len_);
    if (p_.schedule == Schedule::kBlockDiffusion) {
      const forward::MaskRule mask = forward::MaskRule::block_causal(p_.block_length);
      if (p_.cache == CacheMode::kExact)
        kv_ = std::make_unique<KvExactBlocks>(mask);
      else
        kv_ = std::make_unique<KvNone>(mask);
    } else if (p_.cache == CacheMode::kNone) {
      kv_ = std::make_unique<KvNone>();
    } else {
      kv_ = std::make_unique<KvFastDllm>(p_.cache == CacheMode::kDual, p_.shift_logits);
    }
    advance();
  }

  bool done() const { return !plan_; }
  std::span<const forward::Segment> request() const { return segs_; }

  void accept(double forward_ms) {
    const auto t0 = Clock::now();
    const StepPlan& plan = *plan_;
    if (p_.cfg_scale > 0) combine_guided();
    auto scored = score(plan.positions, plan.rng_step, plan.llada, plan.confidence);
    std::vector<Candidate> chosen;
    switch (plan.select) {
      case Select::kAll:
        chosen = std::move(scored);
        break;
      case Select::kThreshold:
        chosen = select_threshold(std::move(scored));
        break;
      case Select::kTopk:
        chosen = select_topk(std::move(scored), plan.k);
        break;
      case Select::kMultinomial:
        chosen = select_multinomial(std::move(scored), plan.k, plan.rng_step);
        break;
      case Select::kThresholdOrTopk:
        chosen = select_threshold_or_topk(std::move(scored), plan.k);
        break;
      case Select::kJointThreshold:
        chosen = select_joint(std::move(scored));
        break;
    }
    kv_->accepted(plan.block);
    commit(std::move(chosen), forward_ms, prep_ms_ + ms_since(t0));
    loop_->accepted();
    advance();
  }

  int64_t steps_run() const { return steps_run_; }
  int64_t prompt_len() const { return prompt_len_; }
  std::span<const int32_t> canvas() const { return canvas_; }
  const std::vector<std::string>& warnings() const { return result_.warnings; }

  GenerateResult result() const {
    GenerateResult r = result_;
    r.canvas = canvas_;
    r.steps_run = steps_run_;
    for (int64_t i = prompt_len_; i < answer_end_; ++i) {
      const int32_t t = canvas_[i];
      if (t == p_.mask_id) break;  // a run that ended early (an error, a cancel); never print masks
      if (t >= 0 && t < n_vocab_ && is_end_[t]) {
        r.ended_with_end_token = true;
        break;
      }
      r.answer.push_back(t);
    }
    return r;
  }

 private:
  /// Logits rows of the first step, the most any step asks for: every masked position of the first
  /// block (LLaDA; Dream with a threshold) or of the whole answer (Dream). 0 for Dream's origin
  /// algorithm, whose steps reveal a random subset (about 1 / steps of it at first): its buffer grows
  /// on demand rather than being sized for the whole answer.
  int64_t first_step_rows() const {
    if (p_.schedule == Schedule::kBlockDiffusion) return p_.block_length;
    if (p_.schedule == Schedule::kBlocks || p_.threshold) return std::max<int64_t>(block_length(), 0);
    if (p_.alg == DreamAlg::kOrigin) return 0;
    return std::max<int64_t>(p_.max_tokens, 0);
  }

  /// The block length the loops use: block_length clipped to the answer, or the whole answer when 0
  /// (Dream without blocks; LLaDA's is checked to be >= 1 and to divide max_tokens).
  int64_t block_length() const {
    return p_.block_length > 0 ? std::min(p_.block_length, p_.max_tokens) : p_.max_tokens;
  }

  bool is_mask(int64_t pos) const { return canvas_[pos] == p_.mask_id; }

  /// Asks the loop for the next step that runs a forward pass and prepares its request; none left
  /// (or the answer is final with early stop): done.
  void advance() {
    const auto t0 = Clock::now();
    plan_.reset();
    if (!stopped_) plan_ = loop_->next(CanvasView{canvas_, prompt_len_, p_.mask_id, masks_left_});
    if (plan_) build_request();
    prep_ms_ = ms_since(t0);
  }

  /// The pending step's forward request; afterwards row_logits(j) is the logits row used for
  /// the plan's positions[j] (shifted to the model's row pos-1 when shift_logits; position 0 uses row 0).
  void build_request() {
    rows_.clear();
    row_of_.clear();
    for (int32_t pos : plan_->positions) {
      const int32_t r = p_.shift_logits ? std::max(pos - 1, 0) : pos;
      if (rows_.empty() || rows_.back() != r) rows_.push_back(r);
      row_of_.push_back(rows_.size() - 1);
    }
    const size_t need = rows_.size() * static_cast<size_t>(n_vocab_);
    if (logits_.size() < need) logits_.resize(need);
    segs_.clear();
    if (p_.cfg_scale > 0) {
      // generate.py l.79-87: un_x = x with every prompt position set to mask_id; both canvases in
      // one pass.
      un_canvas_.assign(canvas_.begin(), canvas_.end());
      std::fill(un_canvas_.begin(), un_canvas_.begin() + prompt_len_, p_.mask_id);
      if (pair_.size() < 2 * need) pair_.resize(2 * need);
      for (const std::span<const int32_t> canvas :
           {std::span<const int32_t>(canvas_), std::span<const int32_t>(un_canvas_)}) {
        forward::Segment seg;
        seg.tokens = canvas;
        seg.logit_rows = rows_;
        seg.logits = pair_.data() + segs_.size() * need;
        segs_.push_back(seg);
      }
      cache_refresh_ = false;
      return;
    }
    forward::Segment seg = kv_->segment(canvas_, plan_->block);
    seg.logit_rows = rows_;
    seg.logits = logits_.data();
    segs_.push_back(seg);
    cache_refresh_ = kv_->refreshed();
  }

  /// logits = un + (cfg_scale + 1) * (cond - un), here in f32 (generate.py l.85-87).
  void combine_guided() {
    const size_t need = rows_.size() * static_cast<size_t>(n_vocab_);
    const float w = static_cast<float>(p_.cfg_scale + 1.0);
    const float* cond = pair_.data();
    const float* un = pair_.data() + need;
    for (size_t i = 0; i < need; ++i) logits_[i] = un[i] + w * (cond[i] - un[i]);
  }

  std::span<const float> row_logits(size_t j) const {
    return {logits_.data() + row_of_[j] * static_cast<size_t>(n_vocab_), static_cast<size_t>(n_vocab_)};
  }

  /// Token and confidence for every position, threaded over positions (each row is serial and
  /// draws from its own (seed, step, position) streams, so the thread count changes nothing).
  std::vector<Candidate> score(const std::vector<int32_t>& positions, int64_t rng_step, bool llada,
                               DreamConfidence kind) {
    std::vector<Candidate> out(positions.size());
    const int64_t n = static_cast<int64_t>(positions.size());
    // Small problems (tests, the last rows of a block) run on the calling thread: a parallel region
    // costs more than it saves there. Either way each row is computed the same way.
    const bool parallel = n > 1 && n * n_vocab_ >= (int64_t{1} << 16);
#pragma omp parallel num_threads(n_threads_) if (parallel)
    {
      std::vector<double> probs;
      std::vector<int32_t> order;
#pragma omp for schedule(dynamic, 1)
      for (int64_t j = 0; j < n; ++j) {
        const int32_t pos = positions[j];
        RowChoice c;
        if (llada) {
          Rng g = Rng::stream(p_.seed, RngPurpose::kGumbel, rng_step, pos);
          c = llada_row(row_logits(j), allowed_, p_.temperature, &g, p_.isa);
          if (p_.remasking == Remasking::kRandom)
            c.confidence = Rng::stream(p_.seed, RngPurpose::kRandomRemask, rng_step, pos).uniform_open();
        } else {
          Rng g = Rng::stream(p_.seed, RngPurpose::kCategorical, rng_step, pos);
          c = dream_row(row_logits(j), allowed_, p_.temperature, p_.top_p, p_.top_k, kind, &g, probs, order,
                        p_.isa);
        }
        out[j] = {pos, c.token, c.confidence};
      }
    }
    return out;
  }

  /// Fast-dLLM get_transfer_index with a threshold: the most confident always, then every other
  /// one with confidence >= threshold.
  std::vector<Candidate> select_threshold(std::vector<Candidate> c) const {
    std::sort(c.begin(), c.end(), more_confident);
    size_t n = 1;
    while (n < c.size() && c[n].conf >= *p_.threshold) ++n;
    c.resize(n);
    return c;
  }

  /// LLaDA2 generate: when at least k positions have confidence > threshold, all of those; else the
  /// min(k, masked) most confident. Without a threshold, the k most confident.
  std::vector<Candidate> select_threshold_or_topk(std::vector<Candidate> c, int64_t k) const {
    std::sort(c.begin(), c.end(), more_confident);
    size_t above = 0;
    if (p_.threshold)
      while (above < c.size() && c[above].conf > *p_.threshold) ++above;
    c.resize(static_cast<int64_t>(above) >= k ? above : std::min<size_t>(c.size(), static_cast<size_t>(k)));
    return c;
  }

  /// SGLang joint_threshold.py, one block's step: the masked positions with confidence > threshold
  /// (none: the most confident one), and every decoded position whose token would change with
  /// confidence > edit_threshold.
  std::vector<Candidate> select_joint(std::vector<Candidate> c) const {
    std::vector<Candidate> out;
    const Candidate* best = nullptr;
    bool any_mask = false;
    for (const Candidate& x : c) {
      if (is_mask(x.pos)) {
        if (x.conf > p_.threshold.value_or(1.0)) {
          out.push_back(x);
          any_mask = true;
        } else if (best == nullptr || more_confident(x, *best)) {
          best = &x;
        }
      } else if (x.token != canvas_[x.pos] && x.conf > *p_.edit_threshold) {
        out.push_back(x);
      }
    }
    if (!any_mask && best != nullptr) out.push_back(*best);
    return out;
  }

  std::vector<Candidate> select_topk(std::vector<Candidate> c, int64_t k) const {
    std::sort(c.begin(), c.end(), more_confident);
    c.resize(std::min<size_t>(c.size(), static_cast<size_t>(k)));
    return c;
  }

  /// Dream alg_temp > 0: torch.multinomial(softmax(confidence / alg_temp), k) without replacement,
  /// drawn as the k largest w_j / E_j with E_j ~ Exp(1) (an exact sampler for successive draws
  /// proportional to w), one uniform per position.
  std::vector<Candidate> select_multinomial(std::vector<Candidate> c, int64_t k, int64_t rng_step) const {
    double m = -std::numeric_limits<double>::infinity();
    for (const auto& x : c) m = std::max(m, x.conf / p_.alg_temp);
    std::vector<std::pair<double, size_t>> keys;
    for (size_t j = 0; j < c.size(); ++j) {
      const double w = std::exp(c[j].conf / p_.alg_temp - m);  // unnormalised softmax weight
      const double e =
          -std::log(Rng::stream(p_.seed, RngPurpose::kAlgTemp, rng_step, c[j].pos).uniform_open());
      keys.push_back({w / e, j});
    }
    std::stable_sort(keys.begin(), keys.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Candidate> out;
    for (int64_t i = 0; i < k && i < static_cast<int64_t>(keys.size()); ++i) out.push_back(c[keys[i].second]);
    return out;
  }

  /// Commits the chosen positions and reports the step (on_step); early stop ends the run.
  void commit(std::vector<Candidate> chosen, double forward_ms, double sample_ms) {
    std::sort(chosen.begin(), chosen.end(),
              [](const Candidate& a, const Candidate& b) { return a.pos < b.pos; });
    std::vector<int32_t> pos, tok;
    std::vector<float> conf;
    bool committed_end = false;
    for (const auto& c : chosen) {
      committed_end |= is_end_[c.token] != 0;
      if (is_mask(c.pos)) --masks_left_;  // else a token-to-token edit (LLaDA2.1)
      canvas_[c.pos] = c.token;
      pos.push_back(c.pos);
      tok.push_back(c.token);
      conf.push_back(static_cast<float>(c.conf));
    }
    // The answer is final once the first position after the prompt that is masked or holds an end
    // token holds an end token (or there is none): committed tokens are never remasked.
    int64_t j = prompt_len_;
    const int64_t n = answer_end_;
    while (j < n && !is_mask(j) && !is_end_[canvas_[j]]) ++j;
    const bool final = j == n || !is_mask(j);
    // Block diffusion stops early as LLaDA2's generate does (eos_early_stop): when this step committed
    // an end token and the answer's first end token has no mask before it. An answer without masks
    // stops it too: later steps would only fill the padding after max_tokens, which is cut.
    // With editing the active block's tokens may still change: nothing in it is final before the block
    // ends, and the run stops at a block's end only (the loop's end-token rule).
    const bool editing = p_.edit_threshold.has_value();
    if (editing) j = std::min(j, std::max(prompt_len_, plan_->block.begin));
    const bool block_stop = p_.schedule == Schedule::kBlockDiffusion && !editing &&
                            ((final && j < n && committed_end && p_.early_stop) || j == n);
    StepInfo info;
    info.step = steps_run_;
    info.block = plan_->block.index;
    info.block_begin = plan_->block.begin;
    info.block_end = plan_->block.end;
    info.positions = pos;
    info.tokens = tok;
    info.confidences = conf;
    info.masks_left = masks_left_;
    info.forward_ms = forward_ms;
    info.sample_ms = sample_ms;
    info.cache_refresh = cache_refresh_;
    info.cache = p_.cache;
    info.canvas = canvas_;
    info.stable_answer_len = j - prompt_len_;
    info.answer_final = final && !editing;
    ++steps_run_;
    if (cb_.on_step) cb_.on_step(info);
    const bool stop = p_.schedule == Schedule::kBlockDiffusion ? block_stop : final && p_.early_stop;
    if (stop && masks_left_ > 0) {
      result_.stopped_early = true;
      stopped_ = true;
    }
  }

  const SamplerParams p_;
  const SamplerCallbacks cb_;
  int64_t n_vocab_ = 0;
  int64_t prompt_len_ = 0;
  int n_threads_ = 1;
  std::vector<int32_t> canvas_;
  std::vector<uint8_t> allowed_;
  std::vector<uint8_t> is_end_;
  std::vector<float> logits_;
  std::vector<int32_t> rows_;
  std::vector<size_t> row_of_;
  std::vector<int32_t> un_canvas_;  ///< CFG: the canvas with the prompt masked
  std::vector<float> pair_;         ///< CFG: cond and uncond logits, 2 x rows x n_vocab
  std::unique_ptr<Loop> loop_;      ///< the denoising loop's cursor
  std::optional<StepPlan> plan_;    ///< the pending step (none: done)
  bool cache_refresh_ = false;
  std::vector<forward::Segment> segs_;  ///< the pending step's forward pass
  std::unique_ptr<KvPolicy> kv_;        ///< the rows each step forwards; with a cache, this sequence's K/V
  double prep_ms_ = 0;                  ///< time advance() took for the pending step (part of its sample_ms)
  int64_t masks_left_ = 0;
  int64_t answer_end_ = 0;  ///< prompt_len + max_tokens: the answer's end (the canvas may be longer)
  int64_t steps_run_ = 0;
  bool stopped_ = false;  ///< early stop: the answer is final
  GenerateResult result_;
};

int64_t canvas_length(const SamplerParams& p, int64_t prompt_len) {
  const int64_t n = prompt_len + p.max_tokens;
  if (p.schedule != Schedule::kBlockDiffusion || p.block_length <= 0) return n;
  return (n + p.block_length - 1) / p.block_length * p.block_length;
}

int64_t planned_steps(const SamplerParams& p, int64_t prompt_len) {
  if (p.entropy_bound) {
    const int64_t C = p.entropy_bound->canvas_length;
    return p.entropy_bound->max_steps * ((p.max_tokens + C - 1) / C);  // an upper bound: it may stop early
  }
  if (p.schedule == Schedule::kBlockDiffusion) {
    // Every block from the prompt's last one to the canvas's end (whole blocks, make_block_diffusion)
    // runs the steps its masks take at the scheduled counts (a threshold can only commit more).
    const int64_t B = p.block_length, n_blocks = canvas_length(p, prompt_len) / B;
    const std::vector<int64_t> counts = block_transfer_counts(B, std::min(p.steps, p.max_tokens));
    int64_t total = 0;
    for (int64_t b = prompt_len / B; b < n_blocks; ++b) {
      const int64_t masks = (b + 1) * B - std::max(b * B, prompt_len);
      int64_t steps = 0;
      for (int64_t done = 0; done < masks && steps < static_cast<int64_t>(counts.size()); ++steps)
        done += counts[static_cast<size_t>(steps)];
      total += steps + (p.edit_threshold ? p.max_post_edit_steps : 0);
    }
    return total;
  }
  if (p.threshold) return p.max_tokens;  // at least one commit per step
  if (p.schedule == Schedule::kBlocks) {
    const int64_t nb = p.max_tokens / p.block_length;
    const auto counts = llada_transfer_counts(p.block_length, p.steps / nb);
    return nb * std::count_if(counts.begin(), counts.end(), [](int64_t k) { return k > 0; });
  }
  if (p.alg == DreamAlg::kOrigin) return p.steps;  // random: an upper bound
  const auto counts = dream_counts(p.max_tokens, p.steps, p.eps);
  return std::count_if(counts.begin(), counts.end(), [](int64_t k) { return k > 0; });
}

std::vector<std::string> check_params(const SamplerParams& p, int64_t prompt_len, int64_t n_vocab) {
  const ParamNames& q = p.names;
  if (p.entropy_bound) {
    const EntropyBoundParams& e = *p.entropy_bound;
    if (p.max_tokens <= 0)
      throw UsageError(q.max_tokens + " must be at least 1 (got " + num(p.max_tokens) + ")");
    if (e.max_steps <= 0) throw UsageError(q.steps + " must be at least 1 (got " + num(e.max_steps) + ")");
    if (e.canvas_length <= 0 || !(e.t_min > 0.0f) || !(e.t_max > 0.0f) || !(e.entropy_bound >= 0.0f) ||
        !(e.confidence >= 0.0f) || e.stability < 0)
      throw UsageError(
          "invalid entropy-bound sampler settings (temperatures must be positive, the bound, the "
          "confidence and the stability count non-negative)");
    if (prompt_len < 1)
      throw UsageError("the prompt is empty: the entropy-bound sampler needs at least one token");
    return {};
  }
  if (p.max_tokens <= 0)
    throw UsageError(q.max_tokens + " must be at least 1 (got " + num(p.max_tokens) + ")");
  if (p.steps <= 0) throw UsageError(q.steps + " must be at least 1 (got " + num(p.steps) + ")");
  if (prompt_len + p.max_tokens > std::numeric_limits<int32_t>::max())
    throw UsageError("prompt + " + q.max_tokens + " is too long (" + num(prompt_len + p.max_tokens) +
                     " positions)");
  if (!(p.temperature >= 0.0) || !std::isfinite(p.temperature))
    throw UsageError(q.temperature + " must be >= 0 (got " + std::to_string(p.temperature) + ")");
  if (p.threshold && !(*p.threshold >= 0.0 && *p.threshold <= 1.0))
    throw UsageError(q.threshold + " must be in [0, 1] (got " + std::to_string(*p.threshold) +
                     "); 0.9 is Fast-dLLM's default");
  if (!(p.cfg_scale >= 0.0) || !std::isfinite(p.cfg_scale))
    throw UsageError(q.cfg_scale + " must be >= 0 (got " + std::to_string(p.cfg_scale) +
                     "); 0 turns guidance off");
  if (p.cfg_scale > 0 && p.schedule == Schedule::kTimesteps)
    throw UsageError(
        q.cfg_scale +
        " applies to LLaDA models (generate.py); Dream's sampler has no classifier-free guidance");
  if (p.cfg_scale > 0 && p.cache != CacheMode::kNone && p.schedule != Schedule::kBlockDiffusion)
    throw UsageError(q.cfg_scale + " cannot be combined with a KV cache (" + q.cache + " " +
                     cache_mode_name(p.cache) + "): use " + q.cache + " none");
  if (p.mask_id < 0 || p.mask_id >= n_vocab)
    throw Error("mask token id " + num(p.mask_id) + " is outside the model's " + num(n_vocab) +
                " logit rows");
  bool any = false;
  for (int64_t id = 0; id < n_vocab && !any; ++id)
    any = id != p.mask_id &&
          (p.sampleable.empty() || (id < static_cast<int64_t>(p.sampleable.size()) && p.sampleable[id]));
  if (!any) throw Error("no token id can be sampled: the tokenizer defines none besides the mask token");
  if (!isa_supported(p.isa))
    throw Error(std::string("sampler kernel path ") + isa_name(p.isa) + " is not supported by this CPU");

  int64_t max_per_step = 0;
  if (p.schedule == Schedule::kBlockDiffusion) {
    if (p.block_length <= 0)
      throw UsageError(q.block_length + " must be at least 1 (got " + num(p.block_length) + ")");
    if (!(p.top_p > 0.0 && p.top_p <= 1.0))
      throw UsageError(q.top_p + " must be in (0, 1] (got " + std::to_string(p.top_p) + "); 1 turns it off");
    if (p.top_k < 0) throw UsageError(q.top_k + " must be >= 0 (got " + num(p.top_k) + "); 0 turns it off");
    if (p.cfg_scale > 0)
      throw UsageError(q.cfg_scale +
                       " applies to LLaDA models (generate.py); block diffusion has no guidance");
    if (p.cache == CacheMode::kPrefix || p.cache == CacheMode::kDual)
      throw UsageError(
          q.cache + " " + cache_mode_name(p.cache) +
          " is Fast-dLLM's approximate cache; block diffusion caches finished blocks exactly: use " +
          q.cache + " exact (the default) or none");
    if (p.edit_threshold && !(*p.edit_threshold >= 0.0 && *p.edit_threshold <= 1.0))
      throw UsageError("edit threshold must be in [0, 1] (got " + std::to_string(*p.edit_threshold) + ")");
    if (p.max_post_edit_steps < 0)
      throw UsageError("max post-edit steps must be >= 0 (got " + num(p.max_post_edit_steps) + ")");
  } else if (p.edit_threshold) {
    throw UsageError("token editing (an edit threshold) applies to block-diffusion models (llada2)");
  } else if (p.cache == CacheMode::kExact) {
    throw UsageError(q.cache + " exact applies to block-diffusion models (llada2): use none, prefix or dual");
  } else if (p.schedule == Schedule::kBlocks) {
    if (p.block_length <= 0)
      throw UsageError(q.block_length + " must be at least 1 (got " + num(p.block_length) + ")");
    if (p.max_tokens % p.block_length != 0)
      throw UsageError(q.max_tokens + " " + num(p.max_tokens) + " is not a multiple of " + q.block_length +
                       " " + num(p.block_length) + ": use " + q.max_tokens + " " +
                       nearest_multiples(p.max_tokens, p.block_length) + ", or a " + q.block_length +
                       " that divides " + num(p.max_tokens) + " (" +
                       divisors_near(p.max_tokens, p.block_length, 6) + ")");
    const int64_t nb = p.max_tokens / p.block_length;
    if (!p.threshold && p.steps % nb != 0)
      throw UsageError(q.steps + " " + num(p.steps) + " is not a multiple of the block count " + num(nb) +
                       " (" + q.max_tokens + " " + num(p.max_tokens) + " / " + q.block_length + " " +
                       num(p.block_length) + "): use " + q.steps + " " + nearest_multiples(p.steps, nb));
    if (!p.threshold) max_per_step = ceil_div(p.block_length, p.steps / nb);
  } else {
    if (p.block_length < 0)
      throw UsageError(q.block_length + " must be >= 0 (got " + num(p.block_length) + ")");
    if (!(p.eps > 0.0 && p.eps < 1.0))
      throw UsageError(q.eps + " must be in (0, 1) (got " + std::to_string(p.eps) + ")");
    if (!(p.top_p > 0.0 && p.top_p <= 1.0))
      throw UsageError(q.top_p + " must be in (0, 1] (got " + std::to_string(p.top_p) + "); 1 turns it off");
    if (p.top_k < 0) throw UsageError(q.top_k + " must be >= 0 (got " + num(p.top_k) + "); 0 turns it off");
    if (!(p.alg_temp >= 0.0) || !std::isfinite(p.alg_temp))
      throw UsageError(q.alg_temp + " must be >= 0 (got " + std::to_string(p.alg_temp) + ")");
    if (!p.threshold) {
      if (p.alg == DreamAlg::kOrigin) {
        max_per_step = ceil_div(p.max_tokens, p.steps);  // expected count; the draw is random
      } else {
        const auto counts = dream_counts(p.max_tokens, p.steps, p.eps);
        max_per_step = *std::max_element(counts.begin(), counts.end());
      }
    }
  }
  std::vector<std::string> warnings;
  if (max_per_step > 4)
    warnings.push_back("up to " + num(max_per_step) + " tokens are committed per step (" + q.max_tokens +
                       " " + num(p.max_tokens) + ", " + q.steps + " " + num(p.steps) +
                       ") without a confidence threshold: parallel decoding without a gate degrades the text "
                       "(repeated words); use more steps or threshold decoding");
  return warnings;
}

/// A Sequence running DiffusionGemma's entropy-bound sampler: StepInfo and GenerateResult in the words
/// of the masked loops (the answer is final block by block; the canvas is the prompt, the finished
/// blocks and the current block's argmax).
class Sequence::EbState {
 public:
  EbState(std::span<const int32_t> prompt, const SamplerParams& p, int64_t n_vocab, SamplerCallbacks cb)
      : cb_(std::move(cb)), prompt_(prompt.begin(), prompt.end()) {
    EntropyBoundParams e = *p.entropy_bound;  // its max_tokens: the caller's (p's is whole canvases)
    e.end_ids = p.end_ids;
    e.isa = p.isa;
    seq_ = std::make_unique<EntropyBoundSequence>(prompt, e, n_vocab,
                                                  p.n_vocab_draw > 0 ? p.n_vocab_draw : n_vocab,
                                                  [this](const EbStepInfo& s) { last_ = s.block; });
    steps_planned_ = e.max_steps * ((e.max_tokens + e.canvas_length - 1) / e.canvas_length);
    canvas_ = prompt_;
  }
  bool done() const { return seq_->done(); }
  std::span<const forward::Segment> next() const { return seq_->next(); }
  void accept(double forward_ms) {
    const auto t0 = Clock::now();
    const int64_t before = seq_->steps_run();
    const auto answer_before = static_cast<int32_t>(seq_->result().answer.size());
    seq_->accept();
    if (seq_->steps_run() == before) return;  // an encoding pass: no step
    const EbResult& r = seq_->result();
    // Committed (final) this step: the finished block's answer, when the step ended a block.
    committed_.clear();
    for (auto j = answer_before; j < static_cast<int32_t>(r.answer.size()); ++j)
      committed_.push_back(static_cast<int32_t>(prompt_.size()) + j);
    canvas_ = prompt_;
    canvas_.insert(canvas_.end(), r.answer.begin(), r.answer.end());
    if (!seq_->done())
      canvas_.insert(canvas_.end(), seq_->current_argmax().begin(), seq_->current_argmax().end());
    if (!cb_.on_step) return;
    StepInfo info;
    info.step = seq_->steps_run() - 1;
    info.block = last_;
    info.block_begin = static_cast<int64_t>(prompt_.size() + r.answer.size());
    info.block_end = static_cast<int64_t>(canvas_.size());
    info.positions = committed_;
    info.forward_ms = forward_ms;
    info.sample_ms = ms_since(t0);
    info.canvas = canvas_;
    info.stable_answer_len = static_cast<int64_t>(r.answer.size());
    info.answer_final = seq_->done();
    cb_.on_step(info);
  }
  int64_t steps_run() const { return seq_->steps_run(); }
  int64_t prompt_len() const { return static_cast<int64_t>(prompt_.size()); }
  std::span<const int32_t> canvas() const { return canvas_; }
  GenerateResult result() const {
    GenerateResult g;
    const EbResult& r = seq_->result();
    g.canvas = prompt_;
    g.canvas.insert(g.canvas.end(), r.answer.begin(), r.answer.end());
    g.answer = r.answer;
    g.steps_run = seq_->steps_run();
    g.steps_planned = steps_planned_;
    g.stopped_early = seq_->done() && g.steps_run < steps_planned_;
    g.ended_with_end_token = !r.cut.empty() && r.cut.back() < static_cast<int64_t>(r.argmax.back().size());
    g.warnings = warnings_;
    return g;
  }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  SamplerCallbacks cb_;
  std::vector<int32_t> prompt_, canvas_, committed_;
  std::unique_ptr<EntropyBoundSequence> seq_;
  int64_t steps_planned_ = 0, last_ = 0;
  std::vector<std::string> warnings_;
};

Sequence::Sequence(std::span<const int32_t> prompt, const SamplerParams& params, int64_t n_vocab,
                   SamplerCallbacks callbacks) {
  if (params.entropy_bound)
    eb_ = std::make_unique<EbState>(prompt, params, n_vocab, std::move(callbacks));
  else
    state_ = std::make_unique<State>(prompt, params, n_vocab, std::move(callbacks));
}
Sequence::~Sequence() = default;
Sequence::Sequence(Sequence&&) noexcept = default;
Sequence& Sequence::operator=(Sequence&&) noexcept = default;

bool Sequence::done() const {
  return eb_ ? eb_->done() : state_->done();
}
std::span<const forward::Segment> Sequence::next() const {
  if (done()) throw Error("Sequence::next: the sequence is done");
  return eb_ ? eb_->next() : state_->request();
}
void Sequence::accept(double forward_ms) {
  if (done()) throw Error("Sequence::accept: the sequence is done");
  if (eb_)
    eb_->accept(forward_ms);
  else
    state_->accept(forward_ms);
}
int64_t Sequence::steps_run() const {
  return eb_ ? eb_->steps_run() : state_->steps_run();
}
int64_t Sequence::prompt_len() const {
  return eb_ ? eb_->prompt_len() : state_->prompt_len();
}
std::span<const int32_t> Sequence::canvas() const {
  return eb_ ? eb_->canvas() : state_->canvas();
}
const std::vector<std::string>& Sequence::warnings() const {
  return eb_ ? eb_->warnings() : state_->warnings();
}
GenerateResult Sequence::result() const {
  return eb_ ? eb_->result() : state_->result();
}

GenerateResult generate(forward::Forward& model, std::span<const int32_t> prompt, const SamplerParams& params,
                        const SamplerCallbacks& callbacks) {
  Sequence seq(prompt, params, model.n_vocab(), callbacks);
  while (!seq.done()) {
    const auto t0 = Clock::now();
    model.forward(seq.next());
    seq.accept(ms_since(t0));
  }
  return seq.result();
}

}  // namespace dllm::diffusion
