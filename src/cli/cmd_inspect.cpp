// `dllm inspect PATH`: metadata, per-type tensor counts and the tensor directory of any GGUF file.
// Works on every architecture: it only opens the file, it does not load a model.
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "gguf/inspect.h"

namespace dllm::cli {

Command add_inspect_command(CLI::App& root) {
  auto path = std::make_shared<std::string>();
  CLI::App* sub = root.add_subcommand(
      "inspect",
      "Print a GGUF file's metadata (arrays summarized), tensor counts per type, and every tensor");
  sub->add_option("path", *path, "The .gguf file")->required();
  return {sub, [path]() {
            const gguf::GgufFile file = gguf::GgufFile::open(*path);
            gguf::print_inspect(file, std::cout);
            std::cout.flush();
            return 0;
          }};
}

}  // namespace dllm::cli
