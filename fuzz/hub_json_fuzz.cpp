// libFuzzer harness: arbitrary bytes as the hub's model-info answer (HF_ENDPOINT may name any
// server), through what the client does with it before downloading: parse_model_info, the file
// choice for several quant specs (choose_gguf), and the check of the names that become cache paths.
//
// Properties: every rejection is a dllm::Error; a chosen file is one of the listed siblings, ends in
// ".gguf" and matches the quant asked for; a file name and commit that pass check_cache_names stay
// inside snapshots/<commit>/ once joined and normalised (an independent lexical check).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/error.h"
#include "fuzz_util.h"
#include "hub/model_info.h"
#include "hub/model_ref.h"

namespace {

using namespace dllm;

bool ends_with_gguf(const std::string& name) {
  if (name.size() < 5) return false;
  std::string tail = name.substr(name.size() - 5);
  for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return tail == ".gguf";
}

void check_stays_inside(const hub::RepoFile& f) {
  const std::filesystem::path snap = std::filesystem::path("/cache/models--o--r/snapshots") / f.commit;
  const std::filesystem::path joined = (snap / f.filename).lexically_normal();
  const std::filesystem::path rel = joined.lexically_relative(snap.lexically_normal());
  FUZZ_CHECK(!rel.empty() && *rel.begin() != ".." && *rel.begin() != ".",
             "file name '" + f.filename + "' leaves the snapshot folder");
  FUZZ_CHECK(snap.lexically_normal().parent_path() == "/cache/models--o--r/snapshots",
             "commit '" + f.commit + "' leaves the snapshots folder");
  FUZZ_CHECK(f.filename.find('\0') == std::string::npos && f.commit.find('\0') == std::string::npos, "NUL");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hub::RepoInfo info;
  try {
    info = hub::parse_model_info(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
    return 0;
  }
  if (info.commit.empty()) info.commit = "0123456789abcdef0123456789abcdef01234567";  // X-Repo-Commit
  for (const char* quant : {"", "Q4_K_M", "q8_0", "F16"}) {
    hub::RepoFile f;
    try {
      f = hub::pick_file("o/r", quant, info);
    } catch (const Error&) {
      continue;
    }
    bool listed = false;
    for (const auto& s : info.siblings) listed = listed || s.name == f.filename;
    FUZZ_CHECK(listed, "chose a file that is not listed");
    FUZZ_CHECK(ends_with_gguf(f.filename), "chose a file that is not a .gguf: " + f.filename);
    if (*quant) FUZZ_CHECK(hub::quant_matches(f.filename, quant), "chose a file of another quant");
    FUZZ_CHECK(!hub::is_split_gguf(f.filename), "chose a part of a split GGUF");
    try {
      hub::check_cache_names(f, "http://127.0.0.1:1");
    } catch (const Error&) {
      continue;
    }
    check_stays_inside(f);
  }
  return 0;
}
