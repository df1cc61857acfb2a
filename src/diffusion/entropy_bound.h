// DiffusionGemma's entropy-bound sampler (transformers generation_diffusion_gemma.py; llama.cpp PR
// #24423 examples/diffusion/diffusion.cpp 442-683 `diffusion_generate_entropy_bound` and its CLI,
// diffusion-cli.cpp 388-482), followed where the two differ as the PR does, so the same seed gives the
// PR's tokens wherever the logits do not decide a near-tie differently:
//
//   per block (the answer is blocks of canvas_length C appended to the prompt):
//     rng = std::mt19937(seed), re-created for every block; canvas = C uniform random ids (not masks)
//     for cur_step = S .. 1 (S = max_steps):
//       t = t_min + (t_max - t_min) * cur_step / S                      (float)
//       logits = forward(canvas rows at positions P.., the prefix in K/V, self-conditioning from the
//                previous step's raw logits scaled by 1 / t_prev; none on the block's first step)
//       per position, in order: u = uniform(rng), renoise = token(rng)
//       per position: argmax of logits / t; Z = sum exp(z - max); sample = the first id whose
//                cumulative exp reaches u Z; entropy H of softmax(logits / t)            (eb_row)
//       positions by ascending entropy (std::sort); accepted while cumulative - own <= entropy_bound
//       canvas = accepted ? sample : renoise; output = the argmax canvas
//       stop when the argmax canvas equals the previous step's (-1 before the first) for
//            `stability` steps in a row and the mean entropy < confidence
//     the block's answer: the argmax canvas cut at the first end id, or where a token repeats at
//     stride 1 or 2 six or more times (the CLI's trim_canvas); encoded causally into K/V after the
//     prefix; a cut shorter than C ends the answer.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "base/isa.h"
#include "forward/pass.h"

namespace dllm::diffusion {

struct EntropyBoundParams {
  int64_t canvas_length = 256;   ///< C: diffusion.canvas_length
  int64_t max_tokens = 256;      ///< answer positions: ceil(max_tokens / C) blocks, the answer cut here
  int64_t max_steps = 48;        ///< S: diffusion.eb_max_steps
  float t_min = 0.4f;            ///< diffusion.eb_t_min
  float t_max = 0.8f;            ///< diffusion.eb_t_max
  float entropy_bound = 0.1f;    ///< diffusion.eb_entropy_bound
  int64_t stability = 1;         ///< diffusion.eb_stability_threshold
  float confidence = 0.005f;     ///< diffusion.eb_confidence_threshold
  uint32_t seed = 0;             ///< std::mt19937's seed (the PR's --seed)
  std::vector<int32_t> end_ids;  ///< the tokenizer's end-of-generation ids
  Isa isa = best_isa();          ///< the path of eb_row's exp and log (must be one this CPU runs)
};

/// std::mt19937 with libstdc++'s distributions written out (so any standard library gives the PR's
/// numbers): token() = uniform_int_distribution<int32_t>(0, n_vocab - 1), (x n_vocab) >> 32 on the
/// 32-bit output x with its rejection rule; uniform() = uniform_real_distribution<float>(0, 1),
/// float(x) / 2^32, clamped below 1 (libstdc++ generate_canonical).
class EbRng {
 public:
  explicit EbRng(uint32_t seed) : g_(seed) {}
  int32_t token(int64_t n_vocab);
  float uniform();

 private:
  std::mt19937 g_;
};

/// The temperature of step cur_step (S .. 1): t_min + (t_max - t_min) * (cur_step / S), in float.
float eb_temperature(const EntropyBoundParams& p, int64_t cur_step);

/// One position's statistics (diffusion.cpp 583-613), in float as the PR computes them.
struct EbRow {
  int32_t argmax = 0;
  int32_t sampled = 0;
  float entropy = 0;
};
/// `isa`: kScalar (and the AVX2 paths) call glibc's expf and logf per id, as the PR; the AVX-512 paths
/// compute them 16 at a time in double, each rounded once to float (entropy_bound_simd.h), which gives
/// the same floats except near a rounding boundary; the sums are the same on every path.
EbRow eb_row(const float* logits, int64_t n_vocab, float temp_inv, float u, Isa isa = Isa::kScalar);
/// Rows a call of eb_rows takes.
constexpr int kEbRowsAtOnce = 4;
/// eb_row of k rows (1 <= k <= kEbRowsAtOnce; rows[r], u[r] -> out[r]), bit-identical to k calls: each
/// row's float sums run in the same order, the rows' interleaved so that their latencies overlap.
/// Throws dllm::Error for another k.
void eb_rows(const float* const* rows, int k, int64_t n_vocab, float temp_inv, const float* u, EbRow* out,
             Isa isa = Isa::kScalar);

/// Which positions a step accepts (diffusion.cpp 644-652): by ascending entropy (std::sort, as the
/// PR), each while the cumulative entropy before it (a double) is <= bound.
std::vector<char> eb_accept(std::span<const float> entropy, double bound);

/// Where the CLI cuts a block's argmax canvas (diffusion-cli.cpp trim_canvas 388-411): at the first
/// end id, or at the start of a run where a token repeats at stride 1 or 2 six or more times.
int64_t eb_trim(std::span<const int32_t> canvas, std::span<const int32_t> end_ids);

/// One step as it happened, for callbacks and tests.
struct EbStepInfo {
  int64_t block = 0, step = 0, cur_step = 0;
  float t = 0;
  std::span<const int32_t> input_canvas, argmax, sampled, renoise;
  std::span<const float> entropy, u;
  std::span<const char> accepted;
  float mean_entropy = 0;
  bool stop = false;
};

struct EbResult {
  std::vector<int32_t> answer;               ///< every block's cut argmax canvas, concatenated
  std::vector<std::vector<int32_t>> argmax;  ///< per block: the last argmax canvas (uncut)
  std::vector<int64_t> cut;                  ///< per block: the cut
  std::vector<int64_t> steps;                ///< per block: steps run
};

/// One generation as a resumable object (like Sequence, sampler.h): next() is the forward pass its
/// next step needs (the prompt's causal encoding, a denoising step of the canvas rows, or a finished
/// block appended), accept() does the step's work. The K/V state belongs to the object.
class EntropyBoundSequence {
 public:
  /// n_vocab: logit rows per position; the ids drawn are < n_vocab_draw (the tokenizer's, as
  /// llama_vocab_n_tokens). Throws dllm::UsageError on a non-positive canvas_length, max_steps or
  /// max_tokens, t_min or t_max not positive, a negative bound or confidence.
  EntropyBoundSequence(std::span<const int32_t> prompt, const EntropyBoundParams& p, int64_t n_vocab,
                       int64_t n_vocab_draw, std::function<void(const EbStepInfo&)> on_step = {});
  bool done() const { return done_; }
  std::span<const forward::Segment> next() const;
  void accept();
  const EbResult& result() const { return result_; }
  /// The block being denoised: its argmax canvas after the last step (empty before the first).
  std::span<const int32_t> current_argmax() const { return argmax_; }
  int64_t steps_run() const { return steps_run_; }

 private:
  void start_block();
  EntropyBoundParams p_;
  int64_t n_vocab_, n_vocab_draw_;
  std::function<void(const EbStepInfo&)> on_step_;
  std::vector<int32_t> prefix_;  ///< prompt + the blocks so far
  mutable forward::KvState kv_;  ///< written by the forward pass of next()'s segment
  int64_t encoded_ = 0;          ///< prefix positions in kv_
  int64_t block_ = 0, cur_step_ = 0, held_ = 0, steps_run_ = 0;
  bool done_ = false, encoding_ = false;
  std::unique_ptr<EbRng> rng_;
  std::vector<int32_t> canvas_, argmax_, prev_argmax_, sampled_, renoise_, rows_;
  mutable std::vector<int32_t> enc_tokens_;
  /// The forward pass writes next()'s logits here, after it read the previous ones from here as
  /// the self-conditioning input.
  mutable std::vector<float> logits_;
  std::vector<float> entropy_, u_;
  float prev_temp_inv_ = 1.0f;
  bool have_prev_ = false;
  mutable forward::Segment seg_;
  EbResult result_;
};

/// Runs an EntropyBoundSequence over `model` to the end.
EbResult generate_entropy_bound(forward::Forward& model, std::span<const int32_t> prompt,
                                const EntropyBoundParams& p, int64_t n_vocab_draw,
                                const std::function<void(const EbStepInfo&)>& on_step = {});

}  // namespace dllm::diffusion
