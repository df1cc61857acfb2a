// Streaming of `dllm run`'s answer through the real binary: text reaches stdout while the steps run,
// also after a byte sequence that is not valid UTF-8 (written as U+FFFD at once, Unicode's maximal
// subpart practice). stdout and stderr go to one file, so the order of the answer's bytes and the
// --verbose step lines is the order the process wrote them in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "run_binary.h"

namespace dllm::test {
namespace {

TEST(Stream, TextAfterAnInvalidSequenceStreamsBeforeTheLastStep) {
  // The tiny LLaDA model's answer to "hello" at 256 tokens (64 steps, 4 tokens each) holds a byte
  // sequence that is not UTF-8 in its first block (random weights); 7 more blocks commit after it.
  const RunResult r = run_program(DLLM_BINARY,
                                  {"run", "--model", llada_path(), "--prompt", "hello", "--max-tokens", "256",
                                   "--steps", "64", "--threads", "2", "--verbose"},
                                  {}, "", /*merge_stderr=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string fffd = "\xEF\xBF\xBD";
  const size_t first_fffd = r.out.find(fffd);
  ASSERT_NE(first_fffd, std::string::npos) << "the answer no longer holds an invalid sequence:\n" << r.out;
  const size_t last_step = r.out.rfind("\nstep ");
  ASSERT_NE(last_step, std::string::npos) << r.out;
  // A stalled stream prints everything after the first invalid sequence once the run has ended,
  // after the last step line.
  EXPECT_LT(first_fffd, last_step) << r.out;
  // And streaming goes on after it: answer text after the U+FFFD, still before the last step.
  const size_t step_after = r.out.find("\nstep ", first_fffd);
  ASSERT_NE(step_after, std::string::npos);
  EXPECT_GT(step_after, first_fffd + fffd.size());
}

}  // namespace
}  // namespace dllm::test
