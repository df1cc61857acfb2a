// `dllm run`: declares the flags of the main job. The pipeline itself is in run_pipeline.cpp.
#include <limits>
#include <memory>

#include "cli/commands.h"
#include "cli/prompt.h"
#include "cli/run_options.h"

namespace dllm::cli {

Command add_run_command(CLI::App& root) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = root.add_subcommand("run",
                                      "Generate an answer to a prompt with a LLaDA, Dream, LLaDA-MoE, RND1, "
                                      "LLaDA2 or DiffusionGemma GGUF model");
  add_model_flags(*sub, o->model);
  add_prompt_flags(*sub, *o);
  sub->add_option("-n,--max-tokens", o->max_tokens,
                  "Tokens to generate: masks in the canvas after the prompt")
      ->check(whole_number(1))
      ->capture_default_str();
  sub->add_option("-s,--steps", o->steps,
                  "Denoising steps (default: --max-tokens, one token per step; not used with --threshold); "
                  "llada2: steps "
                  "PER BLOCK (default 32), used with its threshold")
      ->check(whole_number(1));
  sub->add_option(
         "--block-length", o->block_length,
         "LLaDA: canvas blocks filled left to right; must divide --max-tokens; llada2: its blocks, counted "
         "from position 0 (default 32)")
      ->check(whole_number(1))
      ->capture_default_str();
  sub->add_option("--temperature,--temp", o->temperature, "Sampling temperature (0: greedy)")
      ->check(real_number(0, kInf))
      ->capture_default_str();
  sub->add_option("--seed", o->seed,
                  "Random seed: the same seed gives the same text (a fixed default, so a run repeats; "
                  "serve instead picks a fresh seed per request)")
      ->type_name("INT")
      ->check(whole_number_u64())
      ->capture_default_str();
  add_compute_flags(*sub, o->compute);
  sub->add_option("--remasking", o->remasking, "LLaDA: which masked tokens a step commits")
      ->check(CLI::IsMember({"low_confidence", "random"}))
      ->capture_default_str();
  sub->add_option("--alg", o->alg, "Dream: unmasking order (default entropy)")
      ->check(CLI::IsMember({"origin", "maskgit_plus", "topk_margin", "entropy"}));
  sub->add_option("--alg-temp", o->alg_temp, "Dream: temperature of the order (0: most confident first)")
      ->check(real_number(0, kInf))
      ->capture_default_str();
  sub->add_option("--top-p", o->top_p, "Dream, llada2: nucleus filter before sampling (1: off)")
      ->check(real_number(0, 1, true))
      ->capture_default_str();
  sub->add_option("--top-k", o->top_k, "Dream, llada2: keep the k most likely tokens (0: off)")
      ->check(whole_number(0))
      ->capture_default_str();
  sub->add_option("--threshold", o->threshold,
                  "Fast-dLLM parallel decoding: a step commits every masked position of the block whose "
                  "confidence is at least this, in (0, 1]; llada2 (default 0.95): those above it when they "
                  "are at least the step's scheduled count, else that many most confident (1: schedule only)")
      ->check(real_number(0, 1, true));
  sub->add_option("--edit-threshold", o->edit_threshold,
                  "llada2 (LLaDA2.1): token-to-token editing: a step also rewrites decoded positions of the "
                  "block whose token would change with confidence above this, in [0, 1]; masks are then "
                  "committed above --threshold (default 0.5), at least one per step")
      ->check(real_number(0, 1));
  sub->add_option("--max-post-edit-steps", o->max_post_edit_steps,
                  "With --edit-threshold: steps a block may run after its last mask (default 16)")
      ->check(whole_number(0));
  sub->add_option("--cfg-scale", o->cfg_scale,
                  "LLaDA: classifier-free guidance scale (0: off); a second pass with the prompt masked")
      ->check(real_number(0, kInf))
      ->capture_default_str();
  sub->add_option(
         "--cache", o->cache,
         "KV cache (CPU): prefix or dual reuse other positions' K/V within a block (Fast-dLLM, "
         "approximate; default none); llada2: exact (the default: finished blocks' K/V kept) or none "
         "(recompute the prefix every step, the same tokens)")
      ->check(CLI::IsMember({"none", "prefix", "dual", "exact"}));
  sub->add_option("--eb-t-min", o->eb_t_min,
                  "DiffusionGemma: the last step's temperature (default: the file's diffusion.eb_t_min)")
      ->check(positive_float());
  sub->add_option("--eb-t-max", o->eb_t_max,
                  "DiffusionGemma: the first step's temperature (default: the file's diffusion.eb_t_max)")
      ->check(positive_float());
  sub->add_option("--eb-entropy-bound", o->eb_entropy_bound,
                  "DiffusionGemma: a step keeps the lowest-entropy positions while their summed entropy "
                  "stays within this (default: the file's diffusion.eb_entropy_bound)")
      ->check(real_number(0, kInf));
  sub->add_option("--eb-stability", o->eb_stability,
                  "DiffusionGemma: steps the argmax must stay unchanged to stop early (default: the file's)")
      ->check(whole_number(0));
  sub->add_option("--eb-confidence", o->eb_confidence,
                  "DiffusionGemma: stop early once the mean entropy is below this (default: the file's)")
      ->check(real_number(0, kInf));
  sub->add_flag("--no-chat", o->no_chat, "Feed the prompt as raw text, without the chat template");
  sub->add_flag("--no-special", o->no_special, "Treat control-token text in the prompt as plain text");
  sub->add_flag("--no-early-stop", o->no_early_stop, "Run every step even when the answer is already final");
  sub->add_flag("--json", o->json, "Print one JSON object (text, token ids, steps, timings, peak RSS)");
  sub->add_flag("-v,--verbose", o->verbose, "Print model, timings per step and peak memory to stderr");
  sub->add_option("--trace", o->trace,
                  "Write one JSON line per step (committed positions, timings) to FILE; DiffusionGemma: the "
                  "step's input canvas, argmax, samples, accepted positions and entropies")
      ->check(CLI::Validator(
          [](std::string& v) {
            if (v.empty()) return std::string("needs a file path, got an empty one");
            // '-' would mean standard output elsewhere, but stdout carries only the model's text.
            if (v == "-")
              return std::string(
                  "needs a file path: standard output carries only the model's text "
                  "(use /dev/stderr for the terminal)");
            return std::string();
          },
          "FILE"));
  return {sub, [o, sub]() {
            for (const CLI::Option* opt : sub->get_options()) {
              if (opt->count() > 0) o->given.insert(opt->get_name());
            }
            note_prompt_flags(*sub, *o);
            return run_generate(*o);
          }};
}

}  // namespace dllm::cli
