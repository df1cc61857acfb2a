// Model spec parsing and the GGUF choice rules (Q4_K_M, then Q8_0, then the first .gguf).
#include "hub/model_ref.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>

#include "base/error.h"

namespace dllm::hub {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_gguf(const std::string& name) {
  return ends_with(lower(name), ".gguf");
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// "a.gguf, b.gguf, ..." (at most 20 names, then "and N more").
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  size_t shown = std::min<size_t>(names.size(), 20);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += ", and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace

ModelRef parse_model_ref(const std::string& spec) {
  if (spec.empty()) {
    throw UsageError("--model is empty: give a GGUF file path, org/repo, or org/repo:QUANT");
  }
  ModelRef ref;
  ref.spec = spec;
  std::error_code ec;
  bool looks_like_path = std::filesystem::exists(spec, ec) || starts_with(spec, "/") ||
                         starts_with(spec, "./") || starts_with(spec, "../") || starts_with(spec, "~/") ||
                         is_gguf(spec);
  if (looks_like_path) {
    ref.kind = ModelRef::Kind::kPath;
    ref.path = spec;
    return ref;
  }
  // Hub repo names: letters, digits, '-', '_', '.'; we require exactly one '/'.
  static const std::regex kRepo(
      R"(^([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?::([A-Za-z0-9_]+))?$)");
  std::smatch m;
  if (!std::regex_match(spec, m, kRepo)) {
    throw UsageError("--model '" + spec +
                     "' is not a file and not a Hugging Face repo: give a GGUF file path, org/repo, "
                     "or org/repo:QUANT (e.g. org/repo:Q4_K_M)");
  }
  ref.kind = ModelRef::Kind::kRepo;
  ref.repo = m[1].str();
  ref.quant = m[2].matched ? m[2].str() : "";
  return ref;
}

bool is_split_gguf(const std::string& filename) {
  static const std::regex kSplit(R"(-[0-9]{5}-of-[0-9]{5}\.gguf$)", std::regex::icase);
  return std::regex_search(filename, kSplit);
}

bool quant_matches(const std::string& filename, const std::string& quant) {
  if (quant.empty()) return false;
  std::string name = lower(filename);
  std::string q = lower(quant);
  for (size_t pos = name.find(q); pos != std::string::npos; pos = name.find(q, pos + 1)) {
    bool left_ok = pos == 0 || !word_char(name[pos - 1]);
    size_t end = pos + q.size();
    bool right_ok = end == name.size() || !word_char(name[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

std::string choose_gguf(const std::string& repo, const std::vector<std::string>& files,
                        const std::string& quant) {
  std::vector<std::string> ggufs, singles;
  for (const auto& f : files) {
    if (!is_gguf(f)) continue;
    ggufs.push_back(f);
    if (!is_split_gguf(f)) singles.push_back(f);
  }
  if (ggufs.empty()) {
    throw Error(repo + " has no .gguf file" +
                (files.empty() ? std::string() : " (it has: " + join_names(files) + ")") +
                ": dllm reads GGUF models; pick a repo that publishes GGUF files");
  }
  auto first_match = [](const std::vector<std::string>& names, const std::string& q) -> const std::string* {
    for (const auto& n : names)
      if (quant_matches(n, q)) return &n;
    return nullptr;
  };
  auto split_error = [&](const std::string& what, const std::string& part) {
    std::string msg = what + " is a split GGUF (" + part +
                      " ...): dllm reads one-file GGUFs; merge the parts with `llama-gguf-split --merge " +
                      part + " merged.gguf` and pass the merged file with --model";
    if (!singles.empty()) msg += ", or pick a one-file quant: " + join_names(singles);
    return Error(msg);
  };
  if (!quant.empty()) {
    if (const std::string* f = first_match(singles, quant)) return *f;
    if (const std::string* f = first_match(ggufs, quant)) throw split_error(repo + ":" + quant, *f);
    throw Error("no file of " + repo + " matches quant " + quant + "; its GGUF files are: " +
                join_names(ggufs) + " (use " + repo + ":<QUANT> with one of these)");
  }
  for (const char* q : {"Q4_K_M", "Q8_0"}) {
    if (const std::string* f = first_match(singles, q)) return *f;
  }
  if (!singles.empty()) return singles.front();
  throw split_error(repo, ggufs.front());
}

}  // namespace dllm::hub
