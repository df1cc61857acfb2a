// What `-m` / `--model` names: a local GGUF path, a Hugging Face repo `org/repo`, or `org/repo:QUANT`;
// and the rules that pick one GGUF file out of a repo's file list. Pure string logic, no I/O except
// one existence check in parse_model_ref.
#pragma once

#include <string>
#include <vector>

namespace dllm::hub {

/// A parsed model spec.
struct ModelRef {
  enum class Kind { kPath, kRepo };
  Kind kind = Kind::kPath;
  std::string spec;   ///< the text as the user wrote it
  std::string path;   ///< kPath: the file path, unchanged
  std::string repo;   ///< kRepo: "org/repo"
  std::string quant;  ///< kRepo: "Q4_K_M" as written (matched case-insensitively); empty = default rule

  bool is_path() const { return kind == Kind::kPath; }
  bool is_repo() const { return kind == Kind::kRepo; }
};

/// Parses a model spec. It is a local path when the file exists, when it starts with '/', './', '../'
/// or '~/', or when it ends with ".gguf"; otherwise it must be `org/repo` or `org/repo:QUANT` with
/// org and repo made of [A-Za-z0-9._-] (the hub's repo-name alphabet) and QUANT of [A-Za-z0-9_].
/// Throws dllm::UsageError (exit 2) on an empty spec or a word that is neither (the message shows
/// both accepted forms).
ModelRef parse_model_ref(const std::string& spec);

/// True for the parts of a split GGUF: names ending in "-NNNNN-of-NNNNN.gguf" (llama.cpp gguf-split).
bool is_split_gguf(const std::string& filename);

/// True when `quant` occurs in the file's base name (case-insensitively) as a whole token: the
/// characters around it are not [A-Za-z0-9_]. So "Q4_K" does not match "m-Q4_K_M.gguf" and
/// "Q4_K_M" matches "m-Q4_K_M.gguf", "m.q4_k_m.gguf" and "Q4_K_M/m-Q4_K_M.gguf".
bool quant_matches(const std::string& filename, const std::string& quant);

/// Picks the GGUF file of `repo` among `files` (repo-relative paths as the hub lists them).
/// With a quant: the first single-file .gguf whose name matches it (quant_matches).
/// Without: the first .gguf matching Q4_K_M, else Q8_0, else the first .gguf listed.
/// Throws dllm::Error (exit 1) when nothing matches (the message lists the repo's .gguf files, or says
/// it has none) and when the only matches are split GGUF parts (the message says dllm reads one-file
/// GGUFs, how to merge them with llama-gguf-split --merge, and lists the single-file choices).
std::string choose_gguf(const std::string& repo, const std::vector<std::string>& files,
                        const std::string& quant);

}  // namespace dllm::hub
