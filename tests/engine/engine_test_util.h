// The tiny reference models (../shared/reference/tiny-{llada,dream}-q4km.gguf) loaded once per test
// program, with what a job needs (prompt ids, sampler settings as `dllm run` fills them) and the
// independent computation every engine test compares with: diffusion::generate of one job on a
// backend of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "diffusion/sampler.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace dllm::test {

class TinyModel {
 public:
  static const TinyModel& llada() {
    static const TinyModel m("tiny-llada-q4km.gguf");
    return m;
  }
  static const TinyModel& dream() {
    static const TinyModel m("tiny-dream-q4km.gguf");
    return m;
  }

  const model::Model& model() const { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return tok_; }
  bool is_dream() const { return model_->config().arch_name == "dream"; }

  /// The chat-templated prompt ids of `text`.
  std::vector<int32_t> prompt(const std::string& text) const {
    tokenizer::ChatOptions c;
    c.prompt = text;
    return tokenizer::prompt_tokens(tok_, c);
  }

  /// `run`'s defaults for this architecture: LLaDA block 32 (or the whole answer) with low_confidence;
  /// Dream entropy; early stop; the tokenizer's mask, end and sampleable ids; one sampler thread.
  diffusion::SamplerParams params(int64_t max_tokens, int64_t steps) const {
    diffusion::SamplerParams p;
    p.max_tokens = max_tokens;
    p.steps = steps;
    p.shift_logits = model_->config().shift_logits;
    p.mask_id = tok_.mask_id();
    p.end_ids = tok_.eog_ids();
    p.sampleable = tok_.sampleable_mask(static_cast<int32_t>(n_vocab()));
    p.n_threads = 1;
    if (is_dream()) {
      p.schedule = diffusion::Schedule::kTimesteps;
      p.alg = diffusion::DreamAlg::kEntropy;
      p.block_length = 0;
    } else {
      p.block_length = max_tokens % 32 == 0 ? 32 : max_tokens;
    }
    return p;
  }

  int64_t n_vocab() const { return model_->config().n_vocab; }

  /// The job alone: diffusion::generate on a fresh CPU backend sized for this canvas only.
  diffusion::GenerateResult generate_alone(const engine::JobSpec& spec, int threads = 1) const {
    engine::BackendOptions bo;
    bo.threads = threads;
    bo.max_tokens = static_cast<int64_t>(spec.prompt.size()) + spec.params.max_tokens;
    bo.max_batch = spec.params.cfg_scale > 0 ? 2 : 1;
    bo.cache = spec.params.cache;
    const std::unique_ptr<engine::Backend> b = engine::make_backend(*model_, bo);
    return diffusion::generate(*b, spec.prompt, spec.params);
  }

 private:
  explicit TinyModel(const std::string& name)
      : file_(std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(reference(name).string()))),
        model_(std::make_unique<model::Model>(model::Model::load(*file_))),
        tok_(tokenizer::Tokenizer::from_gguf(*file_)) {}

  std::unique_ptr<gguf::GgufFile> file_;
  std::unique_ptr<model::Model> model_;
  tokenizer::Tokenizer tok_;
};

}  // namespace dllm::test
