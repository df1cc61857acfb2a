// ForwardDriver (driver.h): the checks, the pass layout and the layer loop over DeviceOps.
#include "model/driver.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"

namespace dllm::model {

const forward::KeyRange* PassLayout::key_ranges(int64_t window, size_t s) const {
  if (segs[s].mask.kind == forward::MaskRule::Kind::kFull) return nullptr;  // a window changes nothing
  for (const WindowRanges& w : ranges)
    if (w.window == window) return w.ranges.data() + segs[s].row0;
  return nullptr;
}

ForwardDriver::ForwardDriver(const ForwardPlan& plan, DeviceOps& ops) : plan_(plan), ops_(ops) {}

void ForwardDriver::forward(std::span<const forward::Segment> segments) {
  if (segments.empty()) throw Error("forward: no segments");
  const forward::Capabilities caps = ops_.capabilities();
  // Every check before anything is computed or any state is touched.
  std::vector<int64_t> n_keys;
  n_keys.reserve(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const forward::Segment& s = segments[i];
    n_keys.push_back(plan_.check_segment(s));
    if (s.kv != nullptr) {
      if (!caps.kv_state)
        throw Error("forward: segment " + std::to_string(i) +
                    " has a K/V state, which this device does not keep");
      if (s.kv->storage() != nullptr && s.kv->storage()->owner() != ops_.kv_owner())
        throw Error(
            "forward: segment " + std::to_string(i) +
            "'s K/V state was filled by another forward pass (a state belongs to one model and device)");
      for (size_t j = 0; j < i; ++j)
        if (segments[j].kv == s.kv)
          throw Error("forward: segments " + std::to_string(j) + " and " + std::to_string(i) +
                      " use the same K/V state");
    }
    if (s.mask.kind != forward::MaskRule::Kind::kFull && !caps.masks)
      throw Error("forward: segment " + std::to_string(i) + " has the mask rule " +
                  forward::describe(s.mask) + ", which this device does not run");
  }
  const auto per_pass = static_cast<size_t>(std::max<int64_t>(1, caps.max_segments));
  for (size_t b = 0; b < segments.size(); b += per_pass) {
    const size_t e = std::min(segments.size(), b + per_pass);
    int64_t rows = 0;
    for (size_t i = b; i < e; ++i) rows += segments[i].n_rows();
    if (rows > caps.max_rows) {
      throw Error("forward: " + std::to_string(rows) + " activation rows, at most " +
                  std::to_string(caps.max_rows) + " (max_batch x max_tokens)");
    }
  }
  for (size_t b = 0; b < segments.size(); b += per_pass) {
    const size_t e = std::min(segments.size(), b + per_pass);
    run_pass(segments.subspan(b, e - b), std::span<const int64_t>(n_keys).subspan(b, e - b));
  }
}

void ForwardDriver::lay_out(std::span<const forward::Segment> segments, std::span<const int64_t> n_keys) {
  PassLayout& p = pass_;
  p.segs.clear();
  p.tokens.clear();
  p.positions.clear();
  p.row_seg.clear();
  p.head_rows.clear();
  p.head_seg.clear();
  p.n_rows = p.n_head_rows = p.max_keys = 0;
  bool masked = false;
  for (size_t i = 0; i < segments.size(); ++i) {
    const forward::Segment& s = segments[i];
    PassSegment ps;
    ps.row0 = p.n_rows;
    ps.n_rows = s.n_rows();
    ps.first = s.first;
    ps.n_keys = n_keys[i];
    ps.kv = s.kv;
    ps.mask = s.mask;
    ps.head_row0 = p.n_head_rows;
    ps.logit_rows = s.logit_rows;
    ps.logits = s.logits;
    ps.self_cond = s.self_cond;
    ps.self_cond_scale = s.self_cond_scale;
    for (int64_t t = 0; t < ps.n_rows; ++t) {
      p.tokens.push_back(s.tokens[t]);
      p.positions.push_back(static_cast<int32_t>(s.first + t));
      p.row_seg.push_back(static_cast<int32_t>(i));
    }
    for (const int32_t r : s.logit_rows) {
      p.head_rows.push_back(static_cast<int32_t>(ps.row0 + r - s.first));
      p.head_seg.push_back(static_cast<int32_t>(i));
    }
    p.n_rows += ps.n_rows;
    p.n_head_rows += static_cast<int64_t>(s.logit_rows.size());
    p.max_keys = std::max(p.max_keys, ps.n_keys);
    masked |= s.mask.kind != forward::MaskRule::Kind::kFull;
    p.segs.push_back(ps);
  }
  // Key ranges for the masked segments' rows, once per sliding window the layers use.
  p.ranges.clear();
  if (!masked) return;
  for (size_t il = 0; il < plan_.n_layer(); ++il) {
    const int64_t w = plan_.layer(il).window;
    if (std::any_of(p.ranges.begin(), p.ranges.end(), [&](const auto& r) { return r.window == w; })) continue;
    PassLayout::WindowRanges wr;
    wr.window = w;
    wr.ranges.resize(static_cast<size_t>(p.n_rows));
    for (const PassSegment& ps : p.segs) {
      if (ps.mask.kind == forward::MaskRule::Kind::kFull) continue;
      for (int64_t t = 0; t < ps.n_rows; ++t)
        wr.ranges[ps.row0 + t] = forward::key_range(ps.mask, ps.first + t, ps.n_keys, w);
    }
    p.ranges.push_back(std::move(wr));
  }
}

void ForwardDriver::run_pass(std::span<const forward::Segment> segments, std::span<const int64_t> n_keys) {
  lay_out(segments, n_keys);
  for (const PassSegment& s : pass_.segs)
    if (s.kv != nullptr) ops_.reserve_kv(*s.kv, s.n_keys);
  ops_.reserve(pass_);
  ops_.embed(pass_);
  for (size_t il = 0; il < plan_.n_layer(); ++il) {
    ops_.norm(pass_, il, NormSite::kAttention);
    ops_.project(pass_, il, Projection::kQkv);
    ops_.qk_norm_rope(pass_, il);
    ops_.attention(pass_, il);
    ops_.project(pass_, il, Projection::kO);
    ops_.norm(pass_, il, NormSite::kFfn);
    switch (plan_.layer(il).ffn) {
      case FfnKind::kDense:
        ops_.ffn(pass_, il);
        break;
      case FfnKind::kMoe:
        ops_.moe_ffn(pass_, il);
        break;
      case FfnKind::kGegluDenseMoe:
        ops_.ffn(pass_, il);
        ops_.moe_ffn(pass_, il);
        break;
    }
  }
  ops_.lm_head(pass_);
  for (const PassSegment& s : pass_.segs)
    if (s.kv != nullptr) s.kv->set_rows(s.n_keys);
}

}  // namespace dllm::model
