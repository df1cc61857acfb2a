// `dllm logits`: one forward pass over given token ids (CPU or GPU, --device); writes the UNSHIFTED f32
// logits of the requested positions to a file, [rows, n_vocab] row-major, little-endian, no header: the
// layout of the llama.cpp logits files the parity tests compare with (tests/reference_forward.h), row
// by row.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/loaded_model.h"
#include "cli/model_source.h"
#include "cli/util.h"
#include "engine/backend.h"
#include "forward/mask.h"
#include "model/arch.h"
#include "model/config.h"
#include "model/model.h"

namespace dllm::cli {

namespace {

struct LogitsOptions {
  ModelFlags model;
  ComputeFlags compute;
  std::string tokens;                   ///< --tokens "1 2 3"
  std::string tokens_file;              ///< --tokens-file F (.i32 binary or text)
  std::string out;                      ///< --out FILE
  std::string rows;                     ///< --rows "0 5 7" (default: every position)
  std::optional<int64_t> block_length;  ///< --block-length B: block-diffusion models' block-causal mask
  int64_t prompt_len = -1;  ///< --prompt-len P: causal prompt + bidirectional canvas; -1: the default
  std::string self_cond;    ///< --self-cond FILE: previous canvas logits (f32), DiffusionGemma
  float self_cond_scale = 1.0f;
  bool verbose = false;
};

int run_logits(const LogitsOptions& o) {
  // Opened first, so an --out that cannot be written fails before the model loads; the logits appear
  // at --out whole or not at all (AtomicFile: a temporary file renamed over it, a pipe or a device
  // written directly).
  AtomicFile out(o.out, "--out");
  if (o.tokens.empty() == o.tokens_file.empty()) {
    throw UsageError(
        "logits needs token ids: give exactly one of --tokens \"ID ID ...\" (not empty) or --tokens-file "
        "FILE");
  }
  const std::vector<int32_t> tokens =
      o.tokens_file.empty() ? parse_ids(o.tokens, "--tokens") : read_ids_file(o.tokens_file);
  if (tokens.empty()) throw UsageError("no token ids given: --tokens/--tokens-file is empty");
  const int64_t n = static_cast<int64_t>(tokens.size());

  std::vector<int32_t> rows;
  if (o.rows.empty()) {
    for (int64_t i = 0; i < n; ++i) rows.push_back(static_cast<int32_t>(i));
  } else {
    rows = parse_ids(o.rows, "--rows", "position");
    for (int32_t r : rows) {
      if (r < 0 || r >= n) {
        throw UsageError("--rows: position " + std::to_string(r) + " is outside the " + std::to_string(n) +
                         " tokens given (valid: 0.." + std::to_string(n - 1) + ")");
      }
    }
  }

  std::string omp_warning;
  const int threads = resolve_threads(o.compute.threads, &omp_warning);
  if (!omp_warning.empty()) std::fprintf(stderr, "warning: %s\n", omp_warning.c_str());
  const std::string threads_note = threads_warning(threads, o.compute.threads == 0);
  if (!threads_note.empty()) std::fprintf(stderr, "warning: %s\n", threads_note.c_str());

  const std::string path = resolve_model(o.model.model, offline_requested(o.model));
  Stopwatch load_watch;
  LoadedModel m = load_model(path);
  const int64_t n_ctx = m.model->config().n_ctx_train;
  if (n_ctx > 0 && n > n_ctx) {
    throw UsageError(std::to_string(n) + " tokens given, longer than the model's context of " +
                     std::to_string(n_ctx) + " tokens: pass at most " + std::to_string(n_ctx));
  }
  const int64_t n_vocab_embd = m.model->n_vocab_embd();
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab_embd) {
      throw UsageError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                       " is outside the model's vocabulary [0, " + std::to_string(n_vocab_embd) + ")");
    }
  }
  // The mask. Block-diffusion models (llada2) attend block-causally (forward/mask.h), blocks counted
  // from position 0: the model's block length unless --block-length says otherwise (1: causal).
  // --prompt-len P makes the first P tokens a causal prompt and the rest one bidirectional canvas that
  // sees it (DiffusionGemma's rule; P = n is causal throughout). Default otherwise: causal for an
  // autoregressive model (gemma4), full attention for the diffusion models (diffusion-gemma: every row
  // is canvas, as llama.cpp's graph with no prompt).
  const model::ModelConfig& cfg = m.model->config();
  forward::MaskRule mask = forward::MaskRule::full();
  if (cfg.block_length > 0) {
    if (o.prompt_len >= 0)
      throw UsageError("--prompt-len applies to DiffusionGemma; " + cfg.arch_name +
                       " is block-causal: use --block-length");
    const int64_t b = o.block_length.value_or(cfg.block_length);
    if (b < 1)
      throw UsageError("--block-length must be at least 1 (got " + std::to_string(b) + "); 1 is causal");
    mask = forward::MaskRule::block_causal(b);
  } else if (o.block_length) {
    throw UsageError("--block-length applies to block-diffusion models (llada2); " + cfg.arch_name +
                     " attends to every position");
  } else if (o.prompt_len >= 0) {
    if (o.prompt_len > n)
      throw UsageError("--prompt-len " + std::to_string(o.prompt_len) + " is longer than the " +
                       std::to_string(n) + " tokens given");
    mask = forward::MaskRule::causal_prompt(o.prompt_len);
  } else if (cfg.arch->causal_lm) {
    mask = forward::MaskRule::causal();
  }
  std::vector<float> self_cond;
  if (!o.self_cond.empty()) {
    if (o.prompt_len < 0)
      throw UsageError("--self-cond needs --prompt-len (the canvas rows follow the prompt)");
    if (!m.model->config().self_conditioning)
      throw UsageError("--self-cond: this model has no self-conditioning tensors (self_cond_*)");
    self_cond = read_f32_file(o.self_cond, "--self-cond");
    const int64_t want = (n - o.prompt_len) * m.model->config().n_vocab;
    if (static_cast<int64_t>(self_cond.size()) != want)
      throw UsageError("--self-cond: " + o.self_cond + " holds " + std::to_string(self_cond.size()) +
                       " floats, expected the canvas rows (" + std::to_string(n - o.prompt_len) +
                       ") x n_vocab (" + std::to_string(m.model->config().n_vocab) + ")");
  }
  engine::BackendOptions bo;
  bo.device = resolve_device(o.compute);
  bo.gpu_gemm = o.compute.gpu_gemm;
  bo.threads = threads;
  bo.isa = o.compute.isa;
  bo.max_tokens = n;
  const std::unique_ptr<engine::Backend> backend = engine::make_backend(*m.model, bo);
  for (const std::string& n : backend->notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  const double load_ms = load_watch.elapsed_ms();

  const int64_t n_vocab = backend->n_vocab();
  std::vector<float> logits(rows.size() * static_cast<size_t>(n_vocab));
  Stopwatch fwd_watch;
  forward::Segment seg;
  seg.tokens = tokens;
  seg.logit_rows = rows;
  seg.logits = logits.data();
  seg.mask = mask;
  seg.self_cond = self_cond;
  seg.self_cond_scale = o.self_cond_scale;
  backend->forward({&seg, 1});
  const double forward_ms = fwd_watch.elapsed_ms();

  out.write(logits.data(), logits.size() * sizeof(float));
  out.commit();
  if (o.verbose) {
    std::fprintf(stderr, "model: %s\ntokens: %lld, rows: %zu, n_vocab: %lld\n%s\n", path.c_str(),
                 static_cast<long long>(n), rows.size(), static_cast<long long>(n_vocab),
                 backend->describe().c_str());
    std::fprintf(stderr, "load: %.1f ms, forward: %.1f ms, peak RSS: %s\nwrote %s (%zu bytes)\n", load_ms,
                 forward_ms, format_bytes(peak_rss_bytes()).c_str(), o.out.c_str(), logits.size() * 4);
  }
  return 0;
}

}  // namespace

Command add_logits_command(CLI::App& root) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* sub = root.add_subcommand("logits",
                                      "Run one forward pass over token ids and write f32 logits [rows, "
                                      "vocab] row-major (unshifted) to a file");
  add_model_flags(*sub, o->model);
  sub->add_option("--tokens", o->tokens, "Token ids, e.g. \"1 2 3\" or 1,2,3");
  sub->add_option("--tokens-file", o->tokens_file, "File of token ids: .i32 (int32 little-endian) or text");
  sub->add_option("-o,--out", o->out, "Output file for the logits (f32 little-endian, no header)")
      ->required();
  sub->add_option("--rows", o->rows, "Positions whose logits to write, e.g. \"0 17 49\" (default: all)");
  sub->add_option("--block-length", o->block_length,
                  "Block-diffusion models (llada2): the block-causal mask's block length, blocks counted "
                  "from position 0 (default: the model's, 32; 1 is causal)");
  sub->add_option("--prompt-len", o->prompt_len,
                  "The first P tokens are a causal prompt, the rest a bidirectional canvas that sees it "
                  "(DiffusionGemma); default: causal for gemma4, full attention otherwise")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--self-cond", o->self_cond,
                  "DiffusionGemma: the previous step's canvas logits (f32 [canvas rows][n_vocab]) as "
                  "self-conditioning input");
  sub->add_option("--self-cond-scale", o->self_cond_scale,
                  "Multiplies --self-cond's logits before the softmax (1 / the previous temperature)")
      ->check(CLI::PositiveNumber);
  add_compute_flags(*sub, o->compute);
  sub->add_flag("-v,--verbose", o->verbose, "Print model, timings and peak memory to stderr");
  return {sub, [o]() { return run_logits(*o); }};
}

}  // namespace dllm::cli
