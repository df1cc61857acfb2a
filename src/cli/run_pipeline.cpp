// The pipeline of `dllm run`: resolve the model, load it, build the prompt ids, run the architecture's
// denoising loop over the forward pass (CPU or GPU, --device), print the answer (streamed as it becomes
// final) or JSON. Which loop an architecture runs, and with which defaults, its description says
// (src/model/<arch>.cpp; README "Defaults"): LLaDA and LLaDA-MoE generate.py's blocks (block 32, steps =
// max tokens, low_confidence, temperature 0), Dream and RND1 Dream's timesteps (alg entropy,
// temperature 0, eps 1e-3).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cli/common_flags.h"
#include "cli/loaded_model.h"
#include "cli/model_source.h"
#include "cli/prompt.h"
#include "cli/run_options.h"
#include "cli/run_report.h"
#include "cli/util.h"
#include "cli/vocab_checks.h"
#include "cpu/forward.h"
#include "diffusion/entropy_bound.h"
#include "diffusion/sampler.h"
#include "diffusion/trace.h"
#include "engine/backend.h"
#include "engine/prompt_notes.h"
#include "engine/prompt_rule.h"
#include "engine/sampler_options.h"
#include "model/arch.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

namespace {

/// A canvas longer than this gets a note before the first step (steps of several seconds even on the
/// tiny models; a 24k-token prompt ran minutes per step).
constexpr int64_t kLongCanvas = 4096;

void warn(RunReport& report, const std::string& message) {
  std::fprintf(stderr, "warning: %s\n", message.c_str());
  report.warnings.push_back(message);
}

/// SamplerParams from the flags, the model and the tokenizer (engine::sampler_params, which `serve`
/// calls too); per-architecture defaults for the flags not given. Flags meant for the other
/// architecture draw a warning and are ignored.
diffusion::SamplerParams sampler_params(const RunOptions& o, const model::ModelConfig& cfg,
                                        const tokenizer::Tokenizer& tok, int64_t n_vocab, RunReport& report) {
  engine::SamplerOptions so;
  so.max_tokens = o.max_tokens;
  if (o.was_given("--steps")) so.steps = o.steps;
  if (o.was_given("--block-length")) so.block_length = o.block_length;
  so.temperature = o.temperature;
  so.seed = o.seed;
  if (o.was_given("--remasking")) so.remasking = o.remasking;
  if (o.was_given("--alg")) so.alg = o.alg.empty() ? "entropy" : o.alg;
  if (o.was_given("--alg-temp")) so.alg_temp = o.alg_temp;
  if (o.was_given("--top-p")) so.top_p = o.top_p;
  if (o.was_given("--top-k")) so.top_k = o.top_k;
  so.threshold = o.threshold;
  so.edit_threshold = o.edit_threshold;
  so.max_post_edit_steps = o.max_post_edit_steps;
  so.cfg_scale = o.cfg_scale;
  so.cache = o.cache;
  if (o.was_given("--eb-t-min")) so.eb_t_min = o.eb_t_min;
  if (o.was_given("--eb-t-max")) so.eb_t_max = o.eb_t_max;
  if (o.was_given("--eb-entropy-bound")) so.eb_entropy_bound = o.eb_entropy_bound;
  if (o.was_given("--eb-stability")) so.eb_stability = o.eb_stability;
  if (o.was_given("--eb-confidence")) so.eb_confidence = o.eb_confidence;
  so.early_stop = !o.no_early_stop;
  // Per-row statistics: the forward pass's CPU thread count (physical cores for --threads 0); on the
  // GPU the host threads are free, so --threads (0: OpenMP's default).
  so.n_threads = report.device == "cpu" ? report.threads : o.compute.threads;
  // The sampler runs on the CPU whatever --device says: the same --isa choice as the CPU forward pass.
  so.isa = choose_isa(o.compute.isa);
  std::vector<std::string> warnings;
  diffusion::SamplerParams p = engine::sampler_params(so, cfg, tok, n_vocab, warnings);
  for (const std::string& w : warnings) warn(report, w);
  return p;
}

/// How idle OpenMP workers wait, as this process's environment says (main() sets
/// OMP_WAIT_POLICY=passive when neither variable is set): "OMP_WAIT_POLICY=passive", "GOMP_SPINCOUNT=1000".
std::string openmp_wait() {
  std::string s;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    if (const char* v = std::getenv(name)) s += (s.empty() ? "" : ", ") + std::string(name) + "=" + v;
  }
  return s.empty() ? "libgomp's default spin" : s;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Forward passes the schedule runs without early stop, when a schedule can skip steps: LLaDA
/// (get_num_transfer_tokens gives 0 tokens to some steps when a block has fewer tokens than steps) and
/// Dream's top-k algorithms (int(masks * (1 - s/t)) is 0 on early steps: with steps = max_tokens,
/// step 0 gets int(N * (1 - eps) / N) = 0). Both references run such a step without changing the
/// canvas; generate() skips it. Returns "" when every requested step runs, or when the count is
/// not fixed in advance (threshold decoding, Dream origin: random).
std::string effective_steps_note(const diffusion::SamplerParams& p, bool steps_given) {
  if (p.threshold) return "";
  const std::string requested =
      std::to_string(p.steps) + (steps_given ? " steps (--steps)" : " steps (the default: --max-tokens)");
  if (p.schedule == diffusion::Schedule::kBlocks) {
    const int64_t nb = p.max_tokens / p.block_length;
    const auto counts = diffusion::llada_transfer_counts(p.block_length, p.steps / nb);
    int64_t run = 0;
    for (int64_t k : counts) run += k > 0 ? 1 : 0;
    run *= nb;
    if (run == p.steps) return "";
    return "llada loop: " + std::to_string(run) + " forward passes for " + requested + ": a block of " +
           std::to_string(p.block_length) + " tokens gets " + std::to_string(p.steps / nb) +
           " steps, more than its tokens, so the steps that would commit nothing are skipped";
  }
  if (p.alg == diffusion::DreamAlg::kOrigin) return "";
  const std::vector<float> ts = diffusion::dream_timesteps(p.steps, p.eps);
  int64_t left = p.max_tokens, run = 0;
  std::string empty;  // the skipped steps, "0, 1"
  int64_t n_empty = 0;
  for (int64_t i = 0; i < p.steps; ++i) {
    const int64_t k = std::min(left, diffusion::dream_transfer_count(left, i, ts));
    if (k > 0) {
      ++run;
    } else if (++n_empty <= 3) {
      empty += (empty.empty() ? "" : ", ") + std::to_string(i);
    }
    left -= k;
  }
  if (run == p.steps) return "";
  if (n_empty > 3) empty += ", ...";
  return "dream loop: " + std::to_string(run) + " forward passes for " + requested +
         ": Dream's schedule reveals int(masks * (1 - s/t)) tokens at step i (t, s = timesteps[i], [i+1] "
         "of " +
         "linspace(1, " + fmt(p.eps) + ", steps + 1)), which is 0 at step " + empty + "; " +
         (n_empty == 1 ? "that step is" : "those steps are") + " skipped";
}

/// What the sampler runs, one line (the --json "sampler" field and --verbose): only the parameters the
/// chosen loop uses. Threshold decoding has no step count and Dream's threshold loop no alg, alg_temp
/// or eps, so those are not named there.
std::string describe_sampler(const diffusion::SamplerParams& p, int64_t canvas_after_prompt) {
  std::string s;
  const std::string threshold =
      p.threshold ? "threshold " + fmt(*p.threshold) + " (steps until every block is full)" : "";
  if (p.schedule == diffusion::Schedule::kBlockDiffusion) {
    s = "block diffusion: block " + std::to_string(p.block_length) + ", " +
        (p.edit_threshold ? std::string("until no step changes the block")
                          : std::to_string(p.steps) + " steps per block") +
        ", threshold " + (p.threshold ? fmt(*p.threshold) : std::string("off")) + ", temperature " +
        fmt(p.temperature) + ", top_p " + fmt(p.top_p) + ", top_k " + std::to_string(p.top_k);
    if (p.edit_threshold)
      s += ", edit threshold " + fmt(*p.edit_threshold) + ", " + std::to_string(p.max_post_edit_steps) +
           " post-edit steps";
  } else if (p.schedule == diffusion::Schedule::kBlocks) {
    s = "llada: " + (p.threshold ? threshold : "steps " + std::to_string(p.steps)) + ", block " +
        std::to_string(p.block_length) + ", remasking " + diffusion::remasking_name(p.remasking) +
        ", temperature " + fmt(p.temperature);
  } else if (p.threshold) {
    const int64_t block = p.block_length > 0 ? p.block_length : canvas_after_prompt;
    s = "dream: " + threshold + ", block " + std::to_string(block) + ", confidence p(x0), temperature " +
        fmt(p.temperature) + ", top_p " + fmt(p.top_p) + ", top_k " + std::to_string(p.top_k);
  } else {
    s = "dream: steps " + std::to_string(p.steps) + ", alg " + diffusion::dream_alg_name(p.alg) +
        ", alg_temp " + fmt(p.alg_temp) + ", temperature " + fmt(p.temperature) + ", top_p " + fmt(p.top_p) +
        ", top_k " + std::to_string(p.top_k) + ", eps " + fmt(p.eps);
  }
  if (p.cfg_scale > 0) s += ", cfg_scale " + fmt(p.cfg_scale);
  if (p.cache != diffusion::CacheMode::kNone)
    s += std::string(", cache ") + diffusion::cache_mode_name(p.cache);
  return s;
}

/// Above this temperature the reference formulas no longer sample anything meaningful.
constexpr double kMaxSensibleTemperature = 10.0;

/// The warning for a --temperature above kMaxSensibleTemperature; empty otherwise. LLaDA's Gumbel
/// trick (generate.py add_gumbel_noise: exp(logits) / (-log u)^T, in f64 as here) divides by
/// (-log u)^T, which underflows to 0 for every u above 1/e once T is large: most ids score +inf and
/// the first of them, the lowest id, wins. Dream's softmax(logits / T) becomes uniform over the vocabulary.
std::string temperature_warning(double temperature) {
  if (temperature <= kMaxSensibleTemperature) return "";
  return "--temperature " + fmt(temperature) +
         " is above 10, where the reference sampling formulas degenerate (LLaDA's exp(logits) / "
         "(-log u)^T overflows to +inf for most ids, so the lowest ids win; Dream samples almost "
         "uniformly): the answer will be noise; use 0 (greedy) to 1";
}

/// "2 h 5 min", "3 min 20 s", "41 s", "0.4 s": a duration for a progress line.
std::string human_duration(double seconds) {
  char buf[48];
  if (seconds >= 3600) {
    std::snprintf(buf, sizeof buf, "%d h %d min", static_cast<int>(seconds / 3600),
                  static_cast<int>(seconds / 60) % 60);
  } else if (seconds >= 60) {
    std::snprintf(buf, sizeof buf, "%d min %d s", static_cast<int>(seconds / 60),
                  static_cast<int>(seconds) % 60);
  } else if (seconds >= 10) {
    std::snprintf(buf, sizeof buf, "%d s", static_cast<int>(seconds));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  }
  return buf;
}

std::string quant_mix(const model::Model& m) {
  std::string s;
  for (const auto& [type, count] : m.type_mix()) {
    s += (s.empty() ? "" : ", ") + type + " x" + std::to_string(count);
  }
  return s;
}

}  // namespace

/// DiffusionGemma: the entropy-bound sampler (diffusion/entropy_bound.h) with the file's diffusion.eb_*
/// defaults, each overridden by its flag; every finished block's answer is printed as it ends.
namespace {

/// Fills the report's peak memory and total time, prints it (--verbose on stderr, --json on stdout)
/// and returns run's exit status, 0.
int finish_report(RunReport& report, const RunOptions& o, const Stopwatch& total) {
  report.peak_rss_bytes = peak_rss_bytes();
  report.total_ms = total.elapsed_ms();
  if (o.verbose) print_verbose_summary(report);
  if (o.json) {
    const std::string j = report_json(report);
    std::fwrite(j.data(), 1, j.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int run_entropy_bound(const RunOptions& o, const model::ModelConfig& cfg, const tokenizer::Tokenizer& tok,
                      forward::Forward& source, RunReport& report, Stopwatch& total, int64_t n_prompt) {
  diffusion::EntropyBoundParams p;
  p.canvas_length = cfg.canvas_length;
  p.max_tokens = o.max_tokens;
  p.max_steps = o.was_given("--steps") ? o.steps : cfg.eb.max_steps;
  p.t_min = o.was_given("--eb-t-min") ? static_cast<float>(o.eb_t_min) : cfg.eb.t_min;
  p.t_max = o.was_given("--eb-t-max") ? static_cast<float>(o.eb_t_max) : cfg.eb.t_max;
  p.entropy_bound =
      o.was_given("--eb-entropy-bound") ? static_cast<float>(o.eb_entropy_bound) : cfg.eb.entropy_bound;
  p.stability = o.was_given("--eb-stability") ? o.eb_stability : cfg.eb.stability;
  p.confidence = o.was_given("--eb-confidence") ? static_cast<float>(o.eb_confidence) : cfg.eb.confidence;
  p.seed = static_cast<uint32_t>(o.seed);  // std::mt19937's seed, as the PR's --seed
  // Allowed, as in the PR (t = t_min + (t_max - t_min) * cur_step / S), but likely swapped by mistake.
  if (p.t_min > p.t_max) {
    char w[224];
    std::snprintf(w, sizeof w, "t_min %g (%s) is above t_max %g (%s): the temperature rises over the steps",
                  p.t_min, o.was_given("--eb-t-min") ? "--eb-t-min" : "the file's diffusion.eb_t_min",
                  p.t_max, o.was_given("--eb-t-max") ? "--eb-t-max" : "the file's diffusion.eb_t_max");
    warn(report, w);
  }
  p.end_ids = tok.eog_ids();
  p.isa = choose_isa(o.compute.isa);
  char desc[256];
  std::snprintf(
      desc, sizeof desc,
      "entropy-bound, canvas %lld, %lld block(s), steps %lld, t %g -> %g, entropy bound %g, stability %lld, "
      "confidence %g",
      static_cast<long long>(p.canvas_length),
      static_cast<long long>((p.max_tokens + p.canvas_length - 1) / p.canvas_length),
      static_cast<long long>(p.max_steps), p.t_max, p.t_min, p.entropy_bound,
      static_cast<long long>(p.stability), p.confidence);
  report.sampler = desc;
  if (o.verbose)
    std::fprintf(stderr, "model: %s\nprompt: %lld tokens\nsampler: %s, seed %u\n", report.model_path.c_str(),
                 static_cast<long long>(n_prompt), desc, p.seed);
  const bool stream = !o.json;
  tokenizer::StreamDecoder printer(tok);
  std::string text;
  auto emit = [&](const std::string& piece) {
    text += piece;
    if (stream && !piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  };
  std::unique_ptr<diffusion::TraceWriter> trace;
  if (!o.trace.empty()) trace = std::make_unique<diffusion::TraceWriter>(o.trace);
  Stopwatch gen_watch;
  double fwd_ms = 0;  // the forward pass of the step whose callback runs
  diffusion::EntropyBoundSequence seq(
      report.prompt_tokens, p, source.n_vocab(), tok.n_tokens(), [&](const diffusion::EbStepInfo& s) {
        if (o.verbose)
          std::fprintf(stderr, "block %lld step %lld: t %.3f, mean entropy %.4f%s\n",
                       static_cast<long long>(s.block), static_cast<long long>(s.step), s.t, s.mean_entropy,
                       s.stop ? ", stop" : "");
        if (trace) trace->write(s, fwd_ms);
      });
  size_t printed = 0;
  while (!seq.done()) {
    Stopwatch step_watch;
    source.forward(seq.next());
    fwd_ms = step_watch.elapsed_ms();
    const int64_t before = seq.steps_run();
    seq.accept();
    if (seq.steps_run() > before) {
      report.forward_ms.push_back(fwd_ms);
      report.step_ms.push_back(step_watch.elapsed_ms());
    }
    const auto& answer = seq.result().answer;  // grows when a block ends: final from then on
    for (; printed < answer.size(); ++printed) emit(printer.push(answer[printed]));
  }
  report.generate_ms = gen_watch.elapsed_ms();
  if (trace) trace->commit();
  emit(printer.flush());
  if (stream) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  const diffusion::EbResult& r = seq.result();
  report.text = text;
  report.answer = r.answer;
  for (const auto& b : r.argmax) report.generated.insert(report.generated.end(), b.begin(), b.end());
  report.steps_run = seq.steps_run();
  report.steps_planned = p.max_steps * static_cast<int64_t>(r.argmax.size());
  report.stopped_early = report.steps_run < report.steps_planned;
  report.ended_with_end_token = !r.cut.empty() && r.cut.back() < p.canvas_length &&
                                r.cut.back() < static_cast<int64_t>(r.argmax.back().size()) &&
                                tok.is_eog(r.argmax.back()[static_cast<size_t>(r.cut.back())]);
  return finish_report(report, o, total);
}

int run_generate(RunOptions& o) {
  Stopwatch total;
  RunReport report;
  report.seed = o.seed;
  report.max_tokens = o.max_tokens;
  tokenizer::ChatOptions chat = chat_options(o);  // usage errors before any file I/O

  // --threads 0 and --device auto resolved once (OMP_NUM_THREADS, an ISA choice), for every use below.
  std::string omp_warning;
  const bool threads_from_env = o.compute.threads == 0;
  o.compute.threads = resolve_threads(o.compute.threads, &omp_warning);
  o.compute.device = resolve_device(o.compute);

  // Load: file, weights, tokenizer, matrices.
  report.model_path = resolve_model_or_default(o.model.model, offline_requested(o.model));
  Stopwatch load_watch;
  LoadedModel m = load_model(report.model_path);
  const model::ModelConfig& cfg = m.model->config();
  report.arch = cfg.arch_name;
  report.quant_mix = quant_mix(*m.model);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(*m.file);
  const double tokenizer_ms = load_watch.elapsed_ms();
  for (const std::string& w : check_vocab_keys(*m.file, tok, cfg.arch_name)) warn(report, w);
  if (const std::string w = ignored_system_warning(tok, o); !w.empty()) warn(report, w);

  if (const std::string note = engine::apply_prompt_rule(chat, cfg.arch); !note.empty())
    std::fprintf(stderr, "note: %s\n", note.c_str());
  Stopwatch tok_watch;
  report.prompt_tokens = tokenizer::prompt_tokens(tok, chat);
  report.tokenize_ms = tok_watch.elapsed_ms();
  const int64_t n_prompt = static_cast<int64_t>(report.prompt_tokens.size());
  if (cfg.arch->causal_lm)
    throw Error(cfg.arch_name +
                " is an autoregressive model: dllm computes its logits (dllm logits) as a check "
                "of a diffusion model's backbone, and does not generate text with it");
  if (cfg.canvas_length > 0) {
    // DiffusionGemma answers in blocks of its canvas: one block unless --max-tokens asks for more
    // (llama-diffusion-cli: ceil(-n / canvas) blocks).
    // The answer is cut at --max-tokens.
    if (!o.was_given("--max-tokens")) o.max_tokens = cfg.canvas_length;
    report.max_tokens = o.max_tokens;
  }
  if (cfg.n_ctx_train > 0)
    engine::check_canvas_fits(n_prompt, o.max_tokens, cfg.n_ctx_train, "the model's context", "--max-tokens",
                              cfg.canvas_length);

  Stopwatch fwd_watch;
  engine::BackendOptions bo;
  bo.device = o.compute.device;
  bo.gpu_gemm = o.compute.gpu_gemm;
  bo.threads = o.compute.threads;
  bo.isa = o.compute.isa;
  // Block diffusion rounds the canvas up to whole blocks (diffusion::canvas_length): room for that.
  const int64_t block = o.was_given("--block-length") ? o.block_length : cfg.block_length;
  // DiffusionGemma's answer takes whole canvases (cut at --max-tokens afterwards).
  const int64_t C = std::max<int64_t>(cfg.canvas_length, 1);
  bo.max_tokens = n_prompt + (o.max_tokens + C - 1) / C * C +
                  (cfg.block_length > 0 ? std::max<int64_t>(block - 1, 0) : 0);
  bo.max_batch = o.cfg_scale > 0 ? 2 : 1;  // CFG runs the canvas and its prompt-masked copy together
  bo.cache = o.cache.empty() ? diffusion::CacheMode::kNone : diffusion::parse_cache_mode(o.cache);
  std::string why_cpu;
  const std::unique_ptr<engine::Backend> backend = engine::make_backend(*m.model, bo, &why_cpu);
  report.load_ms = tokenizer_ms + fwd_watch.elapsed_ms();
  report.device = backend->device();
  report.isa = backend->kernels();
  report.threads = backend->threads();
  // The device line is a status line whenever a GPU runs (stdout keeps only the answer).
  if (o.verbose || report.device == "gpu") std::fprintf(stderr, "%s\n", backend->describe().c_str());
  for (const std::string& n : backend->notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  if (o.verbose && !why_cpu.empty())
    std::fprintf(stderr, "(--device auto chose the CPU: %s)\n", why_cpu.c_str());

  forward::Forward& source = *backend;
  if (cfg.canvas_length > 0) {
    if (o.edit_threshold)
      throw UsageError("--edit-threshold applies to block-diffusion models (llada2); " + cfg.arch_name +
                       " has no token editing");
    for (const char* flag :
         {"--block-length", "--temperature", "--remasking", "--alg", "--alg-temp", "--top-p", "--top-k",
          "--threshold", "--cfg-scale", "--cache", "--no-early-stop", "--max-post-edit-steps"})
      if (o.was_given(flag))
        warn(report, std::string(flag) + " does not apply to the entropy-bound sampler of " + cfg.arch_name +
                         "; ignored");
    return run_entropy_bound(o, cfg, tok, source, report, total, n_prompt);
  }
  diffusion::SamplerParams params = sampler_params(o, cfg, tok, backend->n_vocab(), report);
  report.sampler = describe_sampler(params, o.max_tokens);
  for (const std::string& w : diffusion::check_params(params, n_prompt, backend->n_vocab())) warn(report, w);
  if (auto note = engine::typed_mask_note(tok, report.prompt_tokens, params.mask_id); !note.empty())
    std::fprintf(stderr, "note: %s\n", note.c_str());
  for (const std::string& w : backend->warnings) warn(report, w);
  if (!omp_warning.empty()) warn(report, omp_warning);
  const std::string threads_note = threads_warning(o.compute.threads, threads_from_env);
  if (!threads_note.empty()) warn(report, threads_note);
  const std::string temperature_note = temperature_warning(o.temperature);
  if (!temperature_note.empty()) warn(report, temperature_note);
  const std::string steps_note = effective_steps_note(params, o.was_given("--steps"));
  if (!steps_note.empty()) std::fprintf(stderr, "note: %s\n", steps_note.c_str());
  const int64_t canvas = n_prompt + o.max_tokens;
  if (canvas > kLongCanvas) {
    // Every step runs the model over the whole canvas: on a long prompt the first text can take
    // minutes, so say why before the first step.
    std::fprintf(stderr,
                 "note: the canvas is %lld positions (prompt %lld + --max-tokens %lld): every step runs the "
                 "model over "
                 "all of them, so steps are slow and the first text comes after the first step%s\n",
                 static_cast<long long>(canvas), static_cast<long long>(n_prompt),
                 static_cast<long long>(o.max_tokens),
                 o.verbose ? "" : "; --verbose shows each step as it ends");
  }
  const int64_t planned = diffusion::planned_steps(params, n_prompt);

  if (o.verbose) {
    std::fprintf(stderr, "model: %s\n", report.model_path.c_str());
    // A MoE layer's FFN is its experts (a dense n_ff in the file is unused there).
    const std::string ffn = cfg.is_moe() ? std::to_string(cfg.n_expert) + " experts of n_ff " +
                                               std::to_string(cfg.n_ff_exp) + ", " +
                                               std::to_string(cfg.n_expert_used) + " used"
                                         : "n_ff " + std::to_string(cfg.n_ff);
    std::fprintf(stderr, "arch: %s (%lld layers, n_embd %lld, %lld/%lld heads, %s, vocab %lld)\n",
                 cfg.arch_name.c_str(), static_cast<long long>(cfg.n_layer),
                 static_cast<long long>(cfg.n_embd), static_cast<long long>(cfg.n_head),
                 static_cast<long long>(cfg.n_head_kv), ffn.c_str(), static_cast<long long>(cfg.n_vocab));
    std::fprintf(stderr, "quantization: %s\n", report.quant_mix.c_str());
    if (report.device == "cpu") {
      std::fprintf(stderr, "%s\n", describe_isa(parse_isa(report.isa)).c_str());
      std::fprintf(stderr, "threads: %d (OpenMP idle wait: %s)\n", report.threads, openmp_wait().c_str());
    }
    std::fprintf(stderr, "prompt: %lld tokens; canvas: %lld + %lld = %lld tokens\n",
                 static_cast<long long>(n_prompt), static_cast<long long>(n_prompt),
                 static_cast<long long>(o.max_tokens), static_cast<long long>(n_prompt + o.max_tokens));
    std::fprintf(stderr, "sampler: %s, seed %llu\n", report.sampler.c_str(),
                 static_cast<unsigned long long>(o.seed));
    std::fprintf(stderr, "load: %.1f ms\n", report.load_ms);
  }

  std::unique_ptr<diffusion::TraceWriter> trace;
  if (!o.trace.empty()) trace = std::make_unique<diffusion::TraceWriter>(o.trace);

  // Streaming: print answer tokens as soon as they can no longer change (stable_answer_len), through
  // a StreamDecoder so a multi-byte character split across tokens is printed whole.
  const bool stream = !o.json;
  tokenizer::StreamDecoder printer(tok);
  int64_t printed = 0;
  std::string text;
  auto emit = [&](const std::string& piece) {
    text += piece;
    if (stream && !piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  };

  Stopwatch gen_watch;
  diffusion::SamplerCallbacks callbacks;
  callbacks.on_step = [&](const diffusion::StepInfo& s) {
    report.step_ms.push_back(s.forward_ms + s.sample_ms);
    report.forward_ms.push_back(s.forward_ms);
    if (o.verbose) {
      // Progress: steps done of those planned (an upper bound for threshold decoding and Dream's
      // origin), time so far and the time the remaining steps take at this rate.
      const double elapsed_s = gen_watch.elapsed_ms() / 1000.0;
      const int64_t done = s.step + 1;
      const double left_s =
          elapsed_s / static_cast<double>(done) * static_cast<double>(std::max<int64_t>(0, planned - done));
      std::fprintf(
          stderr,
          "step %lld: %.1f ms (forward %.1f, sample %.1f), committed %zu, masks left %lld; %lld/%lld "
          "steps, %s elapsed, %s left at most\n",
          static_cast<long long>(s.step), s.forward_ms + s.sample_ms, s.forward_ms, s.sample_ms,
          s.positions.size(), static_cast<long long>(s.masks_left), static_cast<long long>(done),
          static_cast<long long>(planned), human_duration(elapsed_s).c_str(), human_duration(left_s).c_str());
    }
    if (trace) trace->write(s);
    for (; printed < s.stable_answer_len; ++printed) emit(printer.push(s.canvas[n_prompt + printed]));
  };

  gen_watch.reset();
  const diffusion::GenerateResult result =
      diffusion::generate(source, report.prompt_tokens, params, callbacks);
  report.generate_ms = gen_watch.elapsed_ms();
  if (trace) trace->commit();
  for (; printed < static_cast<int64_t>(result.answer.size()); ++printed)
    emit(printer.push(result.answer[printed]));
  emit(printer.flush());
  if (stream) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }

  report.text = text;
  report.answer = result.answer;
  report.generated.assign(result.canvas.begin() + n_prompt, result.canvas.end());
  report.steps_run = result.steps_run;
  report.steps_planned = result.steps_planned;
  report.stopped_early = result.stopped_early;
  report.ended_with_end_token = result.ended_with_end_token;
  for (const auto& w : result.warnings) {
    bool seen = false;
    for (const auto& r : report.warnings) seen = seen || r == w;
    if (!seen) warn(report, w);
  }
  return finish_report(report, o, total);
}

}  // namespace dllm::cli
