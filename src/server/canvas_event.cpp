// See canvas_event.h.
#include "server/canvas_event.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace dllm::server {

namespace {

/// The placeholder a canvas event shows for a masked position (docs/serving.md).
constexpr const char* kMaskPlaceholder = "\u2591";

/// The answer region as text: committed runs decoded, each mask as the placeholder.
std::string canvas_text(const tokenizer::Tokenizer& tok, std::span<const int32_t> answer, int32_t mask_id) {
  std::string out;
  std::vector<int32_t> run;
  auto flush = [&] {
    if (!run.empty()) out += tokenizer::utf8_replace_invalid(tok.decode(run));
    run.clear();
  };
  for (int32_t id : answer) {
    if (id == mask_id) {
      flush();
      out += kMaskPlaceholder;
    } else {
      run.push_back(id);
    }
  }
  flush();
  return out;
}

}  // namespace

std::string canvas_event_body(const CanvasStep& s, const tokenizer::Tokenizer& tok) {
  using nlohmann::json;
  json committed = json::array(), cells = json::array(), ends = json::array(), changed = json::array();
  for (int32_t pos : s.committed) committed.push_back(pos);
  int64_t total = 0;
  for (size_t i = 0; i < s.answer.size(); ++i) {
    const int32_t id = s.answer[i];
    const bool was_token = i < s.before.size() && s.before[i] != s.mask_id;
    if (was_token && s.before[i] != id) changed.push_back(i);
    if (id == s.mask_id) {
      cells.push_back(nullptr);
      continue;
    }
    ++total;
    cells.push_back(tokenizer::utf8_replace_invalid(tok.token_to_piece(id, true)));
    if (tok.is_eog(id)) ends.push_back(i);
  }
  json j = {{"object", "dllm.canvas"},
            {"id", s.id},
            {"step", s.step},
            {"step_ms", std::round(s.step_ms * 1000) / 1000},
            {"tokens_committed", s.committed.size()},
            {"committed", std::move(committed)},
            {"committed_total", total},
            {"mask", kMaskPlaceholder},
            {"text", canvas_text(tok, s.answer, s.mask_id)},
            {"cells", std::move(cells)},
            {"ends", std::move(ends)}};
  if (s.block_begin > 0 || s.block_end < static_cast<int64_t>(s.answer.size()))
    j["block"] = {s.block_begin, s.block_end};
  if (!changed.empty()) j["changed"] = std::move(changed);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace dllm::server
