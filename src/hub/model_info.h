// What the hub's answers say, parsed and checked without any I/O: the model-info JSON and the file a
// repo spec picks from it. Everything here comes from the network (HF_ENDPOINT may be any server),
// so every field is type-checked and every name that becomes a cache path is refused when it could
// leave the cache. Internal to src/hub (hub.cpp does the requests); fuzzed by fuzz/hub_json_fuzz.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hub/hub.h"

namespace dllm::hub {

/// One entry of "siblings".
struct Sibling {
  std::string name;         ///< "rfilename": repo-relative path
  uint64_t size_bytes = 0;  ///< lfs.size, else size; 0 when absent or not a whole number >= 0
  std::string sha256;       ///< lfs.sha256 lower-cased; empty for files not stored in LFS
};

/// The model-info answer: {"sha": "<commit>", "siblings": [{"rfilename", "size", "lfs": {"sha256",
/// "size"}}, ...]} (huggingface_hub hf_api.model_info with blobs=true). Other fields are ignored.
struct RepoInfo {
  std::string commit;  ///< "sha"; empty when absent
  std::vector<Sibling> siblings;
};

/// Largest model-info body accepted (a repo listing thousands of files is a few MB).
constexpr size_t kMaxModelInfoBytes = size_t{64} << 20;

/// Parses a model-info body. Throws dllm::Error with the reason (not JSON, not an object, "siblings"
/// missing or not an array, an entry without a string "rfilename", "sha" not a string, more than
/// kMaxModelInfoBytes); the caller adds which URL answered. Sizes that are negative, fractional or
/// not numbers count as absent (0), as do a non-string lfs.sha256 and a non-object "lfs".
RepoInfo parse_model_info(std::string_view body);

/// The file `quant` picks (choose_gguf over the sibling names), with the sha256 and size the listing
/// gives for it (empty / 0 when it gives none). Throws as choose_gguf does.
RepoFile pick_file(const std::string& repo, const std::string& quant, const RepoInfo& info);

/// Refuses a file name or commit that would leave the cache folder when used as a path (empty,
/// absolute, a ".." or "." part, a backslash, a NUL; a commit with '/' or '\'), naming the hub at
/// `endpoint`. Names and commits are escaped in the message (base/escape.h).
void check_cache_names(const RepoFile& f, const std::string& endpoint);

}  // namespace dllm::hub
