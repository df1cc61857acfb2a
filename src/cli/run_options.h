// Flags of `dllm run`, as parsed. The flags not given explicitly (`given`) take their architecture's
// default once the model is loaded: sampler_params() in run_pipeline.cpp decides them.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "cli/common_flags.h"

namespace dllm::cli {

struct RunOptions {
  ModelFlags model;
  ComputeFlags compute;
  std::string prompt;         ///< --prompt/-p or the first positional word; "-" reads standard input
  bool prompt_given = false;  ///< an empty --prompt "" counts as given
  std::string prompt_file;    ///< --prompt-file FILE: the prompt is the file's text ("-": standard input)
  bool prompt_file_given = false;
  std::string system;  ///< --system: system message (Dream's default when empty)
  bool system_given = false;
  bool no_chat = false;       ///< --no-chat: feed the raw prompt (still with BOS when the model adds it)
  bool no_special = false;    ///< --no-special: control-token text in the prompt stays plain text
  int64_t max_tokens = 64;    ///< --max-tokens: masks in the canvas after the prompt
  int64_t steps = 0;          ///< --steps: 0 = max_tokens
  int64_t block_length = 32;  ///< --block-length (LLaDA)
  double temperature = 0.0;   ///< --temperature
  uint64_t seed = 0;          ///< --seed
  std::string remasking = "low_confidence";  ///< --remasking (LLaDA): low_confidence | random
  std::string alg;                           ///< --alg (Dream): origin | maskgit_plus | topk_margin | entropy
  double alg_temp = 0.0;                     ///< --alg-temp (Dream)
  double top_p = 1.0;                        ///< --top-p (Dream): 1 = off
  int64_t top_k = 0;                         ///< --top-k (Dream): 0 = off
  std::optional<double> threshold;           ///< --threshold: confidence-threshold parallel decoding
  std::optional<double> edit_threshold;      ///< --edit-threshold (llada2): LLaDA2.1 token editing
  std::optional<int64_t> max_post_edit_steps;  ///< --max-post-edit-steps (with --edit-threshold)
  double cfg_scale = 0.0;                      ///< --cfg-scale (LLaDA): classifier-free guidance, 0 = off
  std::string cache;  ///< --cache: none | prefix | dual (Fast-dLLM) | exact (llada2); "": the model's
  bool no_early_stop = false;  ///< --no-early-stop
  bool json = false;           ///< --json: one JSON object on stdout
  bool verbose = false;        ///< --verbose: diagnostics on stderr
  std::string trace;           ///< --trace FILE: per-step JSON lines
  // DiffusionGemma's entropy-bound sampler (defaults: the file's diffusion.eb_*); --steps is its
  // eb_max_steps.
  double eb_t_min = 0, eb_t_max = 0;  ///< --eb-t-min, --eb-t-max
  double eb_entropy_bound = 0;        ///< --eb-entropy-bound
  int64_t eb_stability = 0;           ///< --eb-stability
  double eb_confidence = 0;           ///< --eb-confidence
  /// Long names of the flags given explicitly ("--alg", "--block-length", ...): per-architecture
  /// defaults apply only to the others, and flags of the other architecture draw a warning.
  std::set<std::string> given;
  bool was_given(const std::string& flag) const { return given.count(flag) > 0; }
};

/// Runs the whole pipeline (resolve model, load, tokenize, denoise, print). Returns the exit code.
int run_generate(RunOptions& o);  // run_pipeline.cpp

}  // namespace dllm::cli
