// `dllm logits`: one forward pass over given token ids (CPU or GPU, --device); writes the UNSHIFTED f32
// logits of the requested positions to a file, [rows, n_vocab] row-major, little-endian, no header: the
// layout of
// ../shared/reference/logits/*.f32, so the parity tests can compare row by row.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "base/error.h"
#include "cli/backend.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/loaded_model.h"
#include "cli/model_source.h"
#include "cli/util.h"

namespace dllm::cli {

namespace {

struct LogitsOptions {
  ModelFlags model;
  ComputeFlags compute;
  std::string tokens;       ///< --tokens "1 2 3"
  std::string tokens_file;  ///< --tokens-file F (.i32 binary or text)
  std::string out;          ///< --out FILE
  std::string rows;         ///< --rows "0 5 7" (default: every position)
  bool verbose = false;
};

/// Fails before the model loads when --out cannot be written: a directory, a missing folder, a
/// folder without write permission. dllm::Error naming the path and the reason.
void check_out_path(const std::string& out) {
  struct stat st {};
  if (::stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error("--out " + out + " is a directory: give a file path inside it, e.g. " +
                (std::filesystem::path(out) / "logits.f32").string());
  }
  std::filesystem::path parent = std::filesystem::path(out).parent_path();
  if (parent.empty()) parent = ".";
  if (::stat(parent.string().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("--out " + out + ": the folder " + parent.string() + " does not exist; create it first");
  }
  if (::access(parent.string().c_str(), W_OK) != 0) {
    throw Error("--out " + out + ": cannot write in " + parent.string() + " (" + std::strerror(errno) + ")");
  }
  if (::access(out.c_str(), F_OK) == 0 && ::access(out.c_str(), W_OK) != 0) {
    throw Error("--out " + out + " is not writable (" + std::string(std::strerror(errno)) + ")");
  }
}

int run_logits(const LogitsOptions& o) {
  check_out_path(o.out);
  if (o.tokens.empty() == o.tokens_file.empty()) {
    throw UsageError("logits needs exactly one of --tokens \"ID ID ...\" or --tokens-file FILE");
  }
  const std::vector<int32_t> tokens =
      o.tokens_file.empty() ? parse_ids(o.tokens, "--tokens") : read_ids_file(o.tokens_file);
  if (tokens.empty()) throw UsageError("no token ids given: --tokens/--tokens-file is empty");
  const int64_t n = static_cast<int64_t>(tokens.size());

  std::vector<int32_t> rows;
  if (o.rows.empty()) {
    for (int64_t i = 0; i < n; ++i) rows.push_back(static_cast<int32_t>(i));
  } else {
    rows = parse_ids(o.rows, "--rows");
    for (int32_t r : rows) {
      if (r < 0 || r >= n) {
        throw UsageError("--rows: position " + std::to_string(r) + " is outside the " + std::to_string(n) +
                         " tokens given (valid: 0.." + std::to_string(n - 1) + ")");
      }
    }
  }

  const std::string threads_note = threads_warning(o.compute.threads);
  if (!threads_note.empty()) std::fprintf(stderr, "warning: %s\n", threads_note.c_str());

  const std::string path = resolve_model(o.model.model, offline_requested(o.model));
  Stopwatch load_watch;
  LoadedModel m = load_model(path);
  const int64_t n_ctx = m.model->config().n_ctx_train;
  if (n_ctx > 0 && n > n_ctx) {
    throw UsageError(std::to_string(n) + " tokens given, longer than the model's context of " +
                     std::to_string(n_ctx) + " tokens: pass at most " + std::to_string(n_ctx));
  }
  const int64_t n_vocab_embd = m.model->n_vocab_embd();
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab_embd) {
      throw UsageError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                       " is outside the model's vocabulary [0, " + std::to_string(n_vocab_embd) + ")");
    }
  }
  BackendOptions bo;
  bo.device = o.compute.device;
  bo.gpu_gemm = o.compute.gpu_gemm;
  bo.threads = o.compute.threads;
  bo.isa = o.compute.isa;
  bo.max_tokens = n;
  const std::unique_ptr<Backend> backend = make_backend(*m.model, bo);
  const double load_ms = load_watch.elapsed_ms();

  const int64_t n_vocab = backend->n_vocab();
  std::vector<float> logits(rows.size() * static_cast<size_t>(n_vocab));
  Stopwatch fwd_watch;
  backend->logits(tokens, rows, logits.data());
  const double forward_ms = fwd_watch.elapsed_ms();

  // A regular file (or a new name) is written under a temporary name and renamed, so a failed write
  // never leaves a plausible-looking file; a symlink is followed first (also a dangling one), so the
  // rename replaces its target, not the link. Anything else that exists (a device such as /dev/null,
  // a pipe) is written in place: renaming over it would replace it with a regular file.
  std::filesystem::path resolved = o.out;
  for (int hops = 0; hops < 40; ++hops) {  // 40: the kernel's own limit on symlink chains
    struct stat lst {};
    if (::lstat(resolved.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
    std::error_code ec;
    const std::filesystem::path next = std::filesystem::read_symlink(resolved, ec);
    if (ec) throw Error("cannot follow the symlink --out " + o.out + " (" + ec.message() + ")");
    resolved = next.is_absolute() ? next : resolved.parent_path() / next;
  }
  const std::string target = resolved.string();
  struct stat st {};
  const bool in_place = ::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const std::string dest = in_place ? target : target + ".tmp";
  {
    std::ofstream f(dest, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write logits file " + dest + " (" + std::strerror(errno) + ")");
    f.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * 4));
    f.close();
    if (!f) {
      if (!in_place) std::remove(dest.c_str());
      throw Error("cannot write logits file: " + o.out + " (disk full?)");
    }
  }
  if (!in_place && std::rename(dest.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(dest.c_str());
    throw Error("cannot write logits file " + o.out + " (" + why + ")");
  }
  if (o.verbose) {
    std::fprintf(stderr, "model: %s\ntokens: %lld, rows: %zu, n_vocab: %lld\n%s\n", path.c_str(),
                 static_cast<long long>(n), rows.size(), static_cast<long long>(n_vocab),
                 backend->describe().c_str());
    std::fprintf(stderr, "load: %.1f ms, forward: %.1f ms, peak RSS: %s\nwrote %s (%zu bytes)\n", load_ms,
                 forward_ms, format_bytes(peak_rss_bytes()).c_str(), o.out.c_str(), logits.size() * 4);
  }
  return 0;
}

}  // namespace

Command add_logits_command(CLI::App& root) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* sub = root.add_subcommand("logits",
                                      "Run one forward pass over token ids and write f32 logits [rows, "
                                      "vocab] row-major (unshifted) to a file");
  add_model_flags(*sub, o->model);
  sub->add_option("--tokens", o->tokens, "Token ids, e.g. \"1 2 3\" or 1,2,3");
  sub->add_option("--tokens-file", o->tokens_file, "File of token ids: .i32 (int32 little-endian) or text");
  sub->add_option("-o,--out", o->out, "Output file for the logits (f32 little-endian, no header)")
      ->required();
  sub->add_option("--rows", o->rows, "Positions whose logits to write, e.g. \"0 17 49\" (default: all)");
  add_compute_flags(*sub, o->compute);
  sub->add_flag("-v,--verbose", o->verbose, "Print model, timings and peak memory to stderr");
  return {sub, [o]() { return run_logits(*o); }};
}

}  // namespace dllm::cli
