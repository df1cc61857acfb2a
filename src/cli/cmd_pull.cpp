// `dllm pull [SPEC]`: downloads a model from the Hugging Face hub into the local cache (or finds it
// there) and prints the file's path on stdout; without SPEC, the default model (default_model.h).
#include <iostream>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/default_model.h"
#include "cli/model_source.h"
#include "hub/hub.h"
#include "hub/model_ref.h"

namespace dllm::cli {

namespace {

/// pull names a repo, not a file: its argument must be org/repo or org/repo:QUANT (the forms
/// hub::parse_model_ref accepts besides paths). The hub's own message speaks of --model, which pull
/// does not have, so a malformed argument gets pull's message here.
void check_pull_spec(const std::string& spec) {
  try {
    hub::parse_model_ref(spec);
  } catch (const UsageError&) {
    throw UsageError(
        "pull: '" + spec +
        "' is not a Hugging Face repo: give org/repo (its Q4_K_M file, else Q8_0, else the first "
        ".gguf) or org/repo:QUANT, e.g. " +
        kDefaultModelSpec);
  }
}

}  // namespace

Command add_pull_command(CLI::App& root) {
  auto o = std::make_shared<ModelFlags>();
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* sub = root.add_subcommand(
      "pull", "Download a model (org/repo[:QUANT]) into the Hugging Face cache and print the file's path");
  sub->add_option("model", o->model,
                  std::string("org/repo or org/repo:QUANT (e.g. :Q4_K_M); default: $DLLM_MODEL, else ") +
                      kDefaultModelSpec);
  sub->add_flag("--offline", o->offline, "Only look in the local cache (also HF_HUB_OFFLINE=1)");
  sub->add_flag(
      "--dry-run", *dry_run,
      "Download nothing: print the file the spec names on the hub and its size in bytes (tab-separated)");
  return {sub, [o, dry_run]() {
            if (o->model.empty()) o->model = default_model_spec();
            check_pull_spec(o->model);
            if (*dry_run) {
              const hub::RepoFile f = hub::lookup_remote(o->model, hub_options(offline_requested(*o)));
              std::cout << f.repo << "/" << f.filename << "\t" << f.size_bytes << "\n";
              return 0;
            }
            const hub::ResolvedModel r = hub::pull(o->model, hub_options(offline_requested(*o)));
            std::cout << r.path << "\n";
            return 0;
          }};
}

}  // namespace dllm::cli
