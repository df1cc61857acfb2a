// The denoising loops of LLaDA (block-based, generate.py) and Dream (timestep-based,
// diffusion_generate / _sample), plus Fast-dLLM confidence-threshold decoding, over a forward::Forward.
// Semantics, sources and differences from llama-diffusion-cli: docs/sampling.md.
//
// Words: the canvas is prompt + max_tokens positions; a masked position holds mask_id; a step runs
// one forward pass and commits (unmasks) some masked positions; committed tokens are never remasked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "diffusion/entropy_bound.h"
#include "forward/pass.h"

namespace dllm::diffusion {

/// Which reference loop runs (loop.h), and which row rule it samples with: block-based (ML-GSAI/LLaDA
/// generate.py `generate`, LLaDA's rows: Gumbel-max, remasking) or timestep-based (Dream
/// generation_utils.py `_sample`, Dream's rows: categorical, alg). With a threshold either runs
/// Fast-dLLM's threshold blocks with its row rule.
enum class Schedule {
  kBlocks,
  kTimesteps,
  /// Block diffusion (LLaDA2.x, HF modeling_llada2_moe.py `generate`, loop.h BlockDiffusion): blocks
  /// of block_length counted from position 0 under the block-causal mask, `steps` steps per block,
  /// threshold with the scheduled-count fallback, Dream-style rows (temperature, top-k, top-p).
  kBlockDiffusion,
};

/// LLaDA `remasking`: which k masked positions of the current block a step commits.
enum class Remasking {
  kLowConfidence,  ///< the k with the highest softmax probability of their argmax token
  kRandom,         ///< k uniformly random ones (confidence = a uniform draw per position)
};

/// Dream `alg`.
enum class DreamAlg {
  kOrigin,       ///< each masked position revealed independently with probability 1 - s/t
  kMaskgitPlus,  ///< top-k by p(x0)
  kTopkMargin,   ///< top-k by p(top1) - p(top2)
  kEntropy,      ///< top-k by sum p log(p + 1e-10) (negative entropy: most certain first)
};

/// Fast-dLLM's approximate KV cache (NVlabs/Fast-dLLM llada/generate.py). Every block starts with a
/// refresh step (the full forward, storing every position's K/V); the block's later steps recompute
/// only a window: kPrefix [block start, canvas end) (generate_with_prefix_cache: the prompt and
/// earlier blocks come from the cache), kDual [block start, block end) (generate_with_dual_cache:
/// the masked suffix comes from the cache too). With the Dream logit shift the window starts one
/// position earlier, so the row of the block's first position is computed (docs/sampling.md).
enum class CacheMode {
  kNone,
  kPrefix,
  kDual,
  /// Block diffusion's exact cache (kv_policy.h KvExactBlocks): finished blocks' K/V written once with
  /// their final tokens; each step forwards the active block's rows. Equals kNone token for token.
  kExact,
};

/// Parses "none" | "prefix" | "dual" | "exact"; throws dllm::UsageError naming the valid values.
CacheMode parse_cache_mode(const std::string& name);
const char* cache_mode_name(CacheMode c);

/// Parses "low_confidence" | "random"; throws dllm::UsageError naming the valid values.
Remasking parse_remasking(const std::string& name);
/// Parses "origin" | "maskgit_plus" | "topk_margin" | "entropy"; throws dllm::UsageError.
DreamAlg parse_dream_alg(const std::string& name);
const char* remasking_name(Remasking r);
const char* dream_alg_name(DreamAlg a);

/// How check_params' messages name the parameters: the field names by default; a front end sets the
/// names its users typed (the CLI: "--max-tokens", "--block-length", ...).
struct ParamNames {
  std::string max_tokens = "max_tokens";
  std::string steps = "steps";
  std::string block_length = "block_length";
  std::string temperature = "temperature";
  std::string threshold = "threshold";
  std::string cfg_scale = "cfg_scale";
  std::string cache = "cache";
  std::string top_p = "top_p";
  std::string top_k = "top_k";
  std::string alg_temp = "alg_temp";
  std::string eps = "eps";
};

struct SamplerParams {
  Schedule schedule = Schedule::kBlocks;
  int64_t max_tokens =
      64;  ///< masked positions appended to the prompt (LLaDA gen_length, Dream max_new_tokens)
  /// total denoising steps, >= 1 (not used when threshold is set); block diffusion: steps per block
  /// (HF generate's `steps`, capped at max_tokens as its minimal_topk 1 does)
  int64_t steps = 64;
  int64_t block_length = 32;  ///< LLaDA block_length; Dream uses it only with threshold (0: one block)
  double temperature = 0.0;   ///< LLaDA: Gumbel-max temperature; Dream: logits / T then categorical
  uint64_t seed = 0;          ///< every random draw derives from (seed, step, position): see docs
  Remasking remasking = Remasking::kLowConfidence;  ///< LLaDA only
  DreamAlg alg = DreamAlg::kOrigin;                 ///< Dream only
  double alg_temp = 0.0;  ///< Dream: > 0 samples positions from softmax(confidence / alg_temp)
  double top_p = 1.0;     ///< Dream, block diffusion: nucleus filter, 1 = off
  int64_t top_k = 0;      ///< Dream, block diffusion: top-k filter, 0 = off
  double eps = 1e-3;      ///< Dream: timesteps = linspace(1, eps, steps + 1)
  /// LLaDA2.1 token-to-token editing (SGLang srt/dllm/algorithm/joint_threshold.py), block diffusion
  /// only: a step commits every masked position of the block above `threshold` (at least the most
  /// confident; no schedule) and rewrites every decoded, non-prompt position of the block whose
  /// chosen token differs from its own with probability above edit_threshold; the block ends when a
  /// step changes nothing, or after max_post_edit_steps steps without masks. nullopt: off (2.0).
  std::optional<double> edit_threshold;
  int64_t max_post_edit_steps = 16;  ///< editing: steps a block may run once it has no mask
  /// Fast-dLLM threshold decoding: each step commits every masked position of the current block with
  /// confidence >= threshold, and at least the most confident one; runs until the block is full.
  std::optional<double> threshold;
  /// LLaDA classifier-free guidance (generate.py l.79-87): > 0 runs a second canvas with every
  /// prompt position set to mask_id and uses un + (cfg_scale + 1) * (cond - un) as the logits.
  /// 0 = off. Not with Dream (its reference has no guidance) and not with a cache.
  double cfg_scale = 0.0;
  /// Fast-dLLM KV cache: approximate, opt-in (see CacheMode).
  CacheMode cache = CacheMode::kNone;
  /// Dream: logits for position i are the model's row i-1 (row 0 for i = 0).
  bool shift_logits = false;
  bool early_stop = true;  ///< stop once the answer (up to its first end token) is final
  int32_t mask_id = -1;    ///< required, in [0, n_vocab)
  /// Ids that end the answer (EOS, EOT, <|im_end|>); the printed answer stops at the first one.
  std::vector<int32_t> end_ids;
  /// sampleable[id] says whether the tokenizer defines id; ids >= sampleable.size() are never
  /// sampled (Dream: logit rows beyond the vocabulary, UNUSED pads). Empty: every id < n_vocab.
  /// The mask id is never sampled whatever this says.
  std::vector<bool> sampleable;
  int n_threads = 0;  ///< threads for per-row statistics; 0: OpenMP's default. Results do not depend on it.
  /// CPU kernel path of the per-row statistics (row_sums.h); must be one this CPU supports. The CLI
  /// passes choose_isa's answer for --isa, the one the CPU forward pass gets; default: the fastest.
  Isa isa = best_isa();
  ParamNames names;  ///< how errors and warnings name the parameters above
  /// DiffusionGemma: when set, the Sequence runs the entropy-bound sampler (entropy_bound.h) with these
  /// settings instead of a masked loop (the fields above then do not apply; max_tokens is the blocks'
  /// length), and end_ids / n_threads as above.
  std::optional<EntropyBoundParams> entropy_bound;
  int64_t n_vocab_draw = 0;  ///< entropy_bound: ids a random token is drawn from (the tokenizer's count)
};

/// One step, as reported to on_step. Spans are valid only during the callback.
struct StepInfo {
  int64_t step = 0;   ///< 0-based index of forward passes run so far (skipped empty steps not counted)
  int64_t block = 0;  ///< LLaDA/threshold block index; 0 for Dream without threshold
  /// Canvas positions [block_begin, block_end) of the block this step worked on (the whole answer
  /// for Dream without threshold).
  int64_t block_begin = 0, block_end = 0;
  std::span<const int32_t> positions;  ///< canvas positions committed this step, increasing
  std::span<const int32_t> tokens;     ///< their tokens
  std::span<const float> confidences;  ///< their confidences (the score the step ranked by)
  int64_t masks_left = 0;              ///< masked positions after this step
  double forward_ms = 0;               ///< time in the forward pass
  double sample_ms = 0;                ///< time in the sampler's own work
  /// With a cache: true when this step ran the full forward (refresh), false when it ran a window.
  bool cache_refresh = false;
  /// The run's cache mode; kNone (no cache: every step is a full forward and nothing is stored, and
  /// cache_refresh is false). Lets a reader tell a window step from an uncached one.
  CacheMode cache = CacheMode::kNone;
  std::span<const int32_t> canvas;  ///< the whole canvas after this step
  /// Leading answer tokens that are final (committed, before any mask or end token): a streaming
  /// printer may print answer[0..stable_answer_len) now.
  int64_t stable_answer_len = 0;
  bool answer_final = false;  ///< the answer can no longer change (end token reached or canvas full)
};

struct SamplerCallbacks {
  std::function<void(const StepInfo&)> on_step;        ///< after every step that ran a forward pass
  std::function<void(const std::string&)> on_warning;  ///< once per warning, before the first step
};

struct GenerateResult {
  std::vector<int32_t> canvas;  ///< final canvas: prompt + max_tokens positions
  /// canvas[prompt_len ..) up to (excluding) the first end token; never contains the mask id.
  std::vector<int32_t> answer;
  int64_t steps_run = 0;  ///< forward passes run
  /// Forward passes the schedule would run without early stop (an upper bound for Dream origin and
  /// for threshold decoding).
  int64_t steps_planned = 0;
  bool stopped_early = false;
  bool ended_with_end_token = false;  ///< the answer ends at an end token (not at the canvas end)
  std::vector<std::string> warnings;
};

/// Validates params for a prompt of prompt_len tokens and n_vocab logit rows and returns the
/// warnings a run would give (more than 4 tokens per step without threshold). generate() calls it
/// too; a caller needs it only to report problems before loading or running anything. Throws
/// dllm::UsageError naming the valid choices: max_tokens <= 0, steps <= 0, block_length <= 0,
/// LLaDA max_tokens not a multiple of block_length, LLaDA steps not a multiple of the block count,
/// temperature/alg_temp < 0, top_p not in (0, 1], top_k < 0, eps not in (0, 1), threshold not in
/// (0, 1], cfg_scale < 0, cfg_scale > 0 with Dream or with a cache; dllm::Error when mask_id is outside [0,
/// n_vocab), no id is sampleable, or this CPU cannot run `isa`.
std::vector<std::string> check_params(const SamplerParams& params, int64_t prompt_len, int64_t n_vocab);

/// Positions of the canvas for a prompt of prompt_len: prompt_len + max_tokens, or for block
/// diffusion that rounded up to whole blocks (HF generate: num_blocks x block_length; the answer is
/// still cut at max_tokens).
int64_t canvas_length(const SamplerParams& params, int64_t prompt_len);

/// HF LLaDA2 _get_num_transfer_tokens: block_length // steps per step, the first block_length % steps
/// steps one more.
std::vector<int64_t> block_transfer_counts(int64_t block_length, int64_t steps);

/// Forward passes the schedule runs without early stop: exact for LLaDA and Dream's top-k algorithms
/// (steps that would commit nothing are skipped) and for block diffusion without a threshold below 1
/// (each block of the canvas after a prompt of prompt_len tokens runs until its masks are committed),
/// an upper bound for Dream origin (random), for threshold decoding (max_tokens: at least one commit
/// per step), for LLaDA2.1 editing (plus max_post_edit_steps per block) and for the entropy-bound
/// sampler. params must pass check_params.
int64_t planned_steps(const SamplerParams& params, int64_t prompt_len);

/// One generation as a resumable object: it says which forward pass its next step needs (next()),
/// the caller runs it and writes the logits to next().out, and accept() does the step's sampling
/// and commit (calling on_step) and moves on to the next step that needs a forward pass (steps that
/// would commit nothing are skipped, as generate() always did). generate() is this loop over one
/// forward::Forward; the engine (src/engine) runs the steps of many Sequences in one batched pass.
/// A Sequence's tokens depend only on its prompt, params and the logits it is given.
class Sequence {
 public:
  /// Validates params (check_params: throws what it throws), calls on_warning for each warning,
  /// builds the canvas and prepares the first step. n_vocab: logit rows per position.
  Sequence(std::span<const int32_t> prompt, const SamplerParams& params, int64_t n_vocab,
           SamplerCallbacks callbacks = {});
  ~Sequence();
  Sequence(Sequence&&) noexcept;
  Sequence& operator=(Sequence&&) noexcept;

  /// No step is left: every position is committed, the schedule ran out, or (early_stop) the answer
  /// is final. result() is then the generation's result.
  bool done() const;
  /// The pending step's forward pass: one segment (the canvas, or with a cache the refresh or the
  /// window over the sequence's K/V state), or two for classifier-free guidance (the canvas and its
  /// prompt-masked copy). The spans point into the Sequence and stay valid until accept().
  /// Throws dllm::Error when done().
  std::span<const forward::Segment> next() const;
  /// The caller has run next() (the logits are written); forward_ms is the time that took
  /// (StepInfo::forward_ms). Throws dllm::Error when done().
  void accept(double forward_ms);

  int64_t steps_run() const;  ///< forward passes accepted so far
  int64_t prompt_len() const;
  std::span<const int32_t> canvas() const;  ///< the canvas now
  const std::vector<std::string>& warnings() const;
  /// The result so far (complete once done(); before, the canvas as far as it got and the answer up
  /// to its first mask).
  GenerateResult result() const;

  class State;
  class EbState;

 private:
  std::unique_ptr<State> state_;
  std::unique_ptr<EbState> eb_;  ///< instead of state_ when params.entropy_bound is set
};

/// Runs the denoising loop: canvas = prompt + max_tokens masks, then steps until every position is
/// committed or (early_stop) the answer is final. Deterministic for a given seed, whatever
/// n_threads. Throws what check_params throws, and what the forward pass throws. A Sequence driven
/// by model.forward(next()).
GenerateResult generate(forward::Forward& model, std::span<const int32_t> prompt, const SamplerParams& params,
                        const SamplerCallbacks& callbacks = {});

// ---- Schedules (exposed for tests and --verbose) ----

/// LLaDA get_num_transfer_tokens (generate.py): masks // steps each, the first masks % steps get +1.
std::vector<int64_t> llada_transfer_counts(int64_t masks, int64_t steps);

/// torch.linspace(1, eps, steps + 1) in f32, element by element as torch's scalar kernel:
/// start + step * i for i < n/2, end - step * (n - 1 - i) after, step = (end - start) / (n - 1).
std::vector<float> dream_timesteps(int64_t steps, double eps);

/// Dream (non-origin algs): tokens revealed at step i with n_masks masks left:
/// int(n_masks * (1 - s/t)) in f32 (t = timesteps[i], s = timesteps[i+1]), all n_masks on the last step.
int64_t dream_transfer_count(int64_t n_masks, int64_t step, const std::vector<float>& timesteps);

/// Dream origin: p_transfer = 1 - s/t in f32, 1 on the last step.
float dream_transfer_probability(int64_t step, const std::vector<float>& timesteps);

}  // namespace dllm::diffusion
