// What a forward pass over a model computes and accepts, whatever device runs it: the layer sequence
// (layer_desc.h), the RoPE table, the activation widths that size every buffer, and the checks of
// every segment with their messages. model::ForwardDriver holds one and the devices' operations
// (device_ops.h) read it; no device writes a check, a table or a size of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "forward/pass.h"
#include "model/config.h"
#include "model/layer_desc.h"
#include "model/rope_table.h"

namespace dllm::model {

class Model;

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
  /// The plan for `model` (which must outlive it) over sequences of up to max_tokens positions,
  /// max_batch of them in one pass. rope_mode: diagnostics only, replaces the architecture's RoPE
  /// pairing in every layer (the backends' ForwardOptions::rope_mode). Throws dllm::Error
  /// "max_tokens must be positive (got N)" or "max_batch must be positive (got N)".
  ForwardPlan(const Model& model, int64_t max_tokens, int max_batch, std::optional<RopeMode> rope_mode);

  /// The model's config, rope_mode replaced when it was forced.
  const ModelConfig& config() const { return config_; }
  const LayerDesc& layer(size_t il) const { return layers_[il]; }
  size_t n_layer() const { return layers_.size(); }
  /// cos / sin of every position < max_tokens for each distinct (n_rot, rope_freq_base) of the layers:
  /// max_tokens x n_rot/2 floats each, made on request so that a backend checks its memory
  /// (GpuForward's device check) before the host tables exist. Layer il uses
  /// rope_tables()[rope_table_of(il)].
  std::vector<RopeTable> make_rope_tables() const;
  size_t rope_table_of(size_t il) const { return rope_of_layer_[il]; }
  /// Widths of the widest layer (per-layer head sizes and K/V heads: Gemma-4).
  const ActivationWidths& widths() const { return widths_; }
  /// The largest head_dim of any layer.
  int64_t max_head_dim() const { return max_head_dim_; }
  int64_t max_tokens() const { return max_tokens_; }
  int max_batch() const { return max_batch_; }
  /// Activation rows one pass may hold: max_batch x max_tokens.
  int64_t max_rows() const { return max_tokens_ * max_batch_; }

  /// Checks one segment before any compute and returns its keys: its K/V state's rows after the pass
  /// (max(rows(), first + n)) or n without a state. Throws dllm::Error with the message shown for:
  ///   n rows not in [1, max_tokens]: "forward: <n> tokens, expected 1..<max_tokens> (max_tokens)"
  ///   rows past the positions the plan holds: "forward: positions <first>..<last> reach past
  ///     max_tokens <max_tokens>"
  ///   a token id outside token_embd's rows: "token id <id> at position <pos> is outside the
  ///     vocabulary [0, <V>)"
  ///   more logit rows than max_tokens: "forward: <k> logits rows requested, at most <max_tokens>"
  ///   a logit row not computed: "logits row <r> is outside the sequence [0, <n>)" (rows from 0) or
  ///     "... the window [<first>, <end>)"
  ///   no state and first != 0: "forward: a segment without a K/V state starts at position 0 (got
  ///     <first>)"
  ///   self_cond given to a model without it, or not canvas rows x n_vocab under a causal-prompt
  ///     mask: "forward: self-conditioning input ..."
  ///   a state whose rows end before first: "forward: the K/V state holds <rows> positions, the
  ///     segment starts at <first>: run a refresh step first (the keys between would be missing)"
  int64_t check_segment(const forward::Segment& s) const;

 private:
  ModelConfig config_;
  std::vector<LayerDesc> layers_;
  std::vector<size_t> rope_of_layer_;  ///< per layer: its RoPE table among make_rope_tables()
  std::vector<size_t> rope_layers_;    ///< per RoPE table: the first layer that uses it
  ActivationWidths widths_;
  int64_t max_head_dim_ = 0;
  std::vector<float> rope_freqs_;  ///< the model's rope_freqs (layers with rope_freq_factors)
  int64_t max_tokens_ = 0;
  int max_batch_ = 1;
  int64_t n_vocab_embd_ = 0;
};

}  // namespace dllm::model
