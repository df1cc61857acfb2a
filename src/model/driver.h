// ForwardDriver: runs a model's layer sequence (layer_desc.h) over a device's operations
// (device_ops.h). It owns what every device shares: the checks of the segments (ForwardPlan), the
// layout of one pass's rows, the key ranges of each row under its segment's mask rule and its layer's
// window, the K/V states' rows, and the order of the operations. A device implements the operations
// and nothing of the model's structure.
#pragma once

#include <span>

#include "forward/pass.h"
#include "model/device_ops.h"
#include "model/forward_plan.h"

namespace dllm::model {

class ForwardDriver {
 public:
  /// `plan` and `ops` must outlive the driver.
  ForwardDriver(const ForwardPlan& plan, DeviceOps& ops);

  /// forward::Forward::forward: checks every segment (ForwardPlan::check_segment, the device's
  /// capabilities, a state given twice or made by another device), then runs the segments in passes
  /// of at most capabilities().max_segments, each pass: lay out the rows, grow the states and the
  /// buffers, embed, the layers, the LM head, and record each state's rows. Throws dllm::Error
  /// before any compute.
  void forward(std::span<const forward::Segment> segments);

 private:
  /// One pass over segments that fit together (checked; n_keys[i] from check_segment).
  void run_pass(std::span<const forward::Segment> segments, std::span<const int64_t> n_keys);
  void lay_out(std::span<const forward::Segment> segments, std::span<const int64_t> n_keys);

  const ForwardPlan& plan_;
  DeviceOps& ops_;
  PassLayout pass_;
};

}  // namespace dllm::model
