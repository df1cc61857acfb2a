// Parsing and checking of the hub's model-info answer (see model_info.h).
#include "hub/model_info.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/escape.h"
#include "hub/model_ref.h"

namespace dllm::hub {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// A JSON number that is a whole number >= 0 (nlohmann keeps integers as number_unsigned or
/// number_integer; a float such as 1e300 would overflow the conversion), else 0.
uint64_t size_or_zero(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<uint64_t>(it->get<int64_t>());
  return 0;
}

}  // namespace

RepoInfo parse_model_info(std::string_view body) {
  if (body.size() > kMaxModelInfoBytes)
    throw Error("the answer is " + std::to_string(body.size()) + " bytes, more than the " +
                std::to_string(kMaxModelInfoBytes >> 20) + " MiB a model listing takes");
  // No exceptions from the parser itself: a malformed body gives a discarded value.
  const nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) throw Error("not JSON");
  if (!j.is_object()) throw Error("not a JSON object");
  RepoInfo info;
  if (auto sha = j.find("sha"); sha != j.end()) {
    if (!sha->is_string()) throw Error("\"sha\" is not a string");
    info.commit = sha->get<std::string>();
  }
  auto siblings = j.find("siblings");
  if (siblings == j.end()) throw Error("no \"siblings\" list");
  if (!siblings->is_array()) throw Error("\"siblings\" is not a list");
  info.siblings.reserve(siblings->size());
  for (size_t k = 0; k < siblings->size(); ++k) {
    const nlohmann::json& s = (*siblings)[k];
    auto name = s.is_object() ? s.find("rfilename") : s.end();
    if (!s.is_object() || name == s.end() || !name->is_string())
      throw Error("sibling " + std::to_string(k) + " has no \"rfilename\" string");
    Sibling sib;
    sib.name = name->get<std::string>();
    sib.size_bytes = size_or_zero(s, "size");
    if (auto lfs = s.find("lfs"); lfs != s.end() && lfs->is_object()) {
      if (auto sha = lfs->find("sha256"); sha != lfs->end() && sha->is_string())
        sib.sha256 = lower(sha->get<std::string>());
      if (const uint64_t n = size_or_zero(*lfs, "size")) sib.size_bytes = n;
    }
    info.siblings.push_back(std::move(sib));
  }
  return info;
}

RepoFile pick_file(const std::string& repo, const std::string& quant, const RepoInfo& info) {
  std::vector<std::string> names;
  names.reserve(info.siblings.size());
  for (const auto& s : info.siblings) names.push_back(s.name);
  RepoFile f;
  f.repo = repo;
  f.filename = choose_gguf(repo, names, quant);
  f.commit = info.commit;
  for (const auto& s : info.siblings) {
    if (s.name == f.filename) {
      f.sha256 = s.sha256;
      f.size_bytes = s.size_bytes;
    }
  }
  return f;
}

void check_cache_names(const RepoFile& f, const std::string& endpoint) {
  bool bad_name = f.filename.empty() || f.filename.front() == '/' ||
                  f.filename.find_first_of(std::string_view("\\\0", 2)) != std::string::npos;
  for (const auto& part : std::filesystem::path(f.filename))
    bad_name = bad_name || part == ".." || part == ".";
  const bool bad_commit = f.commit.empty() ||
                          f.commit.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos ||
                          f.commit == "." || f.commit == "..";
  if (bad_name || bad_commit) {
    throw Error("the hub at " + endpoint + " gave an unusable file name '" + escape_text(f.filename) +
                "' or commit '" + escape_text(f.commit) + "' for " + f.repo + ": check HF_ENDPOINT");
  }
}

}  // namespace dllm::hub
