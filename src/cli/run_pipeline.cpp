// The pipeline of `dllm run`: model -> tokens -> denoising loop -> text.
#include "base/error.h"
#include "cli/run_options.h"

namespace dllm::cli {

int run_generate(RunOptions& o) {
  throw Error("dllm run is not available yet: the tokenizer and diffusion samplers have not landed");
}

}  // namespace dllm::cli
