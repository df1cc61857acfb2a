// What a forward pass over a model computes and accepts, whatever device runs it: the layer sequence
// (layer_desc.h), the RoPE table, the activation widths that size every buffer, where each computed
// position lands among the activation rows, and the checks of every input with their messages.
// cpu::CpuForward and cuda::GpuForward each build one in their constructor and implement the
// operations; neither writes a check, a table or a size of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/layer_desc.h"
#include "model/rope_table.h"

namespace dllm::model {

class Model;

/// Which positions one forward pass computes and where each lands among the activation rows (the
/// rows of every activation buffer, row-major). n_seq sequences of n tokens, given one after another
/// (token index s * n + pos), each computing the window [begin, end) of its positions (the whole
/// sequence, [0, n), without a KV cache): sequence s owns rows_of(s) rows from first_row(s), and its
/// attention reads the keys of keys_of(s) positions. One GEMM runs over all n_rows() rows; attention
/// stays within a sequence. Every user goes through these functions, so sequences of different
/// lengths (a packed batch, cu_seqlens-style offsets) change only this struct and its makers.
struct RowLayout {
  int64_t n_seq = 1;
  int64_t n = 0;      ///< tokens (positions) per sequence
  int64_t begin = 0;  ///< first position computed
  int64_t end = 0;    ///< one past the last position computed

  int64_t n_rows() const { return n_seq * (end - begin); }
  /// The first activation row of sequence s, and how many it has.
  int64_t first_row(int64_t s) const { return s * (end - begin); }
  int64_t rows_of(int64_t s) const { return end - begin; }
  /// Positions whose keys sequence s attends to: 0 .. keys_of(s) - 1.
  int64_t keys_of(int64_t s) const { return n; }
  /// Position (within its sequence) of activation row r.
  int64_t position(int64_t r) const { return begin + r % (end - begin); }
  /// Index into the tokens (n_seq x n) of activation row r.
  int64_t token_index(int64_t r) const { return (r / (end - begin)) * n + position(r); }
  /// Activation row of position pos (in [begin, end)) of sequence s.
  int64_t row_of(int64_t s, int64_t pos) const { return first_row(s) + pos - begin; }
};

/// Floats per activation row of the buffers a backend holds.
struct ActivationWidths {
  int64_t embd = 0;  ///< residual stream x and the input of q/k/v, gate/up and the LM head: n_embd
  int64_t q = 0;     ///< q and the attention output (input of Wo): n_head * head_dim
  int64_t kv = 0;    ///< k and v: n_head_kv * head_dim
  int64_t ff = 0;    ///< gate and up outputs, the input of Wdown: n_ff
  /// The widest matrix input (embd, q or ff): a buffer this wide holds any projection input.
  int64_t widest_input() const;
};

class ForwardPlan {
 public:
  /// The plan for `model` (which must outlive it) over sequences of up to max_tokens tokens,
  /// max_batch at a time. rope_mode: diagnostics only, replaces the architecture's RoPE pairing in
  /// every layer (the backends' ForwardOptions::rope_mode). Throws dllm::Error "max_tokens must be
  /// positive (got N)" or "max_batch must be positive (got N)".
  ForwardPlan(const Model& model, int64_t max_tokens, int max_batch, std::optional<RopeMode> rope_mode);

  /// The model's config, rope_mode replaced when it was forced.
  const ModelConfig& config() const { return config_; }
  const LayerDesc& layer(size_t il) const { return layers_[il]; }
  size_t n_layer() const { return layers_.size(); }
  /// cos / sin of every position < max_tokens: max_tokens x head_dim/2 floats each, made on request so
  /// that a backend checks its memory (GpuForward's device check) before this host table exists.
  RopeTable make_rope_table() const;
  const ActivationWidths& widths() const { return widths_; }
  int64_t max_tokens() const { return max_tokens_; }
  int max_batch() const { return max_batch_; }
  /// Rows every activation buffer holds: max_batch x max_tokens.
  int64_t max_rows() const { return max_tokens_ * max_batch_; }

  // The checks of every input, before any compute; each throws dllm::Error with the message shown.

  /// n in [1, max_tokens]: "forward: <n> tokens, expected 1..<max_tokens> (max_tokens)"; every id
  /// in [0, token_embd rows): "token id <id> at position <t % n> is outside the vocabulary [0, <V>)".
  void check_tokens(std::span<const int32_t> tokens, int64_t n) const;
  /// At most max_tokens rows: "forward: <k> logits rows requested, at most <max_tokens>"; each in
  /// [begin, end): "logits row <r> is outside the sequence [0, <end>)" (begin 0) or "... the window
  /// [<begin>, <end>)".
  void check_rows(std::span<const int32_t> rows, int64_t begin, int64_t end) const;
  /// A whole-sequence pass: check_tokens, check_rows over [0, n); its layout (one sequence).
  RowLayout check_forward(std::span<const int32_t> tokens, std::span<const int32_t> rows) const;
  /// n_seq sequences of one length: "forward_batch: <k> sequences, expected 1..<max_batch>
  /// (max_batch)", "forward_batch: <t> tokens do not split into <k> sequences of one length", then
  /// check_tokens and check_rows over [0, n); its layout.
  RowLayout check_batch(std::span<const int32_t> tokens, int64_t n_seq, std::span<const int32_t> rows) const;
  /// A window of one sequence of n tokens: "forward_window: window [<b>, <e>) is empty or outside
  /// the canvas [0, <n>)", then check_rows over the window; its layout. (Call check_tokens first.)
  RowLayout check_window(int64_t n, int64_t begin, int64_t end, std::span<const int32_t> rows) const;

 private:
  ModelConfig config_;
  std::vector<LayerDesc> layers_;
  ActivationWidths widths_;
  int64_t max_tokens_ = 0;
  int max_batch_ = 1;
  int64_t n_vocab_embd_ = 0;
};

/// The layer sequence of a forward pass, written once for every backend: embed, then for each layer
/// its attention block and the FFN block its description names, then the LM head. `pass`
/// implements the blocks over the pass in progress: embed(), attention_block(il), ffn_block(il)
/// (FfnKind::kDense), ffn_moe_block(il) (FfnKind::kMoe) and lm_head(). A new FfnKind adds its case here and
/// its block to each backend.
template <class Pass>
void run_layers(const ForwardPlan& plan, Pass& pass) {
  pass.embed();
  for (size_t il = 0; il < plan.n_layer(); ++il) {
    pass.attention_block(il);
    switch (plan.layer(il).ffn) {
      case FfnKind::kDense:
        pass.ffn_block(il);
        break;
      case FfnKind::kMoe:
        pass.ffn_moe_block(il);
        break;
    }
  }
  pass.lm_head();
}

}  // namespace dllm::model
