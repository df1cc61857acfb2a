// `dllm pull SPEC`: downloads a model from the Hugging Face hub into the local cache (or finds it
// there) and prints the file's path on stdout. The ./dllm launcher's `pull` and `setup` call this.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/model_source.h"
#include "hub/hub.h"

namespace dllm::cli {

Command add_pull_command(CLI::App& root) {
  auto o = std::make_shared<ModelFlags>();
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* sub = root.add_subcommand(
      "pull", "Download a model (org/repo[:QUANT]) into the Hugging Face cache and print the file's path");
  sub->add_option("model", o->model, "org/repo or org/repo:QUANT (e.g. :Q4_K_M)")->required();
  sub->add_flag("--offline", o->offline, "Only look in the local cache (also HF_HUB_OFFLINE=1)");
  sub->add_flag(
      "--dry-run", *dry_run,
      "Download nothing: print the file the spec names on the hub and its size in bytes (tab-separated)");
  return {sub, [o, dry_run]() {
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
