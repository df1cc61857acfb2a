// run_request and LogitsSource's default packed pass (logits_source.h).
#include "diffusion/logits_source.h"

#include <array>

namespace dllm::diffusion {

void run_request(LogitsSource& model, const ForwardRequest& r) {
  if (!r.uncond.empty()) {
    const std::array<std::span<const int32_t>, 2> canvases{r.canvas, r.uncond};
    model.logits_batch(canvases, r.rows, r.out);
    return;
  }
  switch (r.kind) {
    case ForwardKind::kFull:
      model.logits(r.canvas, r.rows, r.out);
      return;
    case ForwardKind::kRefresh:
    case ForwardKind::kWindow:
      model.logits_cached(r.canvas, r.rows, r.window_begin, r.window_end, r.kind == ForwardKind::kRefresh,
                          r.out);
      return;
  }
}

void LogitsSource::logits_packed(std::span<const PackedRequest> batch) {
  for (const PackedRequest& p : batch) run_request(*this, *p.request);
}

}  // namespace dllm::diffusion
