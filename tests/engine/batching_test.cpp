// Batched against alone: jobs of mixed settings (LLaDA / Dream schedules, temperature, threshold,
// CFG, exact / prefix / dual cache, remasking, max_tokens, prompt lengths) stepped together by one
// engine give, each, the tokens diffusion::generate gives that job on a CPU backend of its own (the
// independent computation: nothing else in that run). The jobs join and leave the batch at
// different steps (more jobs than slots, different step counts), so each is packed beside
// different company over its life. Also: the streamed events describe the canvas changes exactly.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace dllm {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::Job;
using engine::JobResult;
using engine::JobSpec;
using engine::JobStatus;
using engine::StepEvent;
using test::TinyModel;

/// Runs `specs` through one engine (parallel slots) and checks each against generate() alone.
void expect_batched_equals_alone(const TinyModel& m, const std::vector<JobSpec>& specs, int parallel) {
  EngineOptions o;
  o.parallel = parallel;
  o.threads = 2;
  o.max_canvas = 160;
  Engine eng(m.model(), o);
  std::vector<std::shared_ptr<Job>> jobs;
  for (const JobSpec& s : specs) jobs.push_back(eng.submit(s));
  int64_t total_steps = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobResult r = jobs[i]->wait();
    ASSERT_EQ(r.status, JobStatus::kOk) << "job " << i << ": " << r.error;
    const diffusion::GenerateResult alone = m.generate_alone(specs[i]);
    EXPECT_EQ(r.gen.canvas, alone.canvas) << "job " << i;
    EXPECT_EQ(r.gen.answer, alone.answer) << "job " << i;
    EXPECT_EQ(r.gen.steps_run, alone.steps_run) << "job " << i;
    total_steps += r.gen.steps_run;
  }
  const engine::EngineMetrics mt = eng.metrics();
  EXPECT_EQ(mt.sequence_steps, total_steps);
  // The jobs did share passes (else this test would show nothing about batching).
  EXPECT_LT(mt.forward_passes, mt.sequence_steps);
}

JobSpec job(const TinyModel& m, const std::string& prompt, int64_t max_tokens, int64_t steps) {
  return JobSpec{m.prompt(prompt), m.params(max_tokens, steps), false};
}

TEST(Batching, LladaMixedSettingsEqualAlone) {
  const TinyModel& m = TinyModel::llada();
  std::vector<JobSpec> s;
  s.push_back(job(m, "Once upon a time", 32, 8));
  s.back().params.temperature = 0.7;
  s.back().params.seed = 11;
  s.push_back(job(m, "The little fox ran into the dark forest and", 64, 16));
  s.back().params.cache = diffusion::CacheMode::kDual;
  s.push_back(job(m, "Hi", 32, 32));
  s.back().params.threshold = 0.5;
  s.back().params.cache = diffusion::CacheMode::kPrefix;
  s.push_back(job(m, "A story about a cat", 32, 8));
  s.back().params.cfg_scale = 1.0;
  s.push_back(job(m, "Tell me", 32, 8));
  s.back().params.remasking = diffusion::Remasking::kRandom;
  s.back().params.cache = diffusion::CacheMode::kDual;
  s.back().params.seed = 5;
  s.push_back(job(m, "Once upon a time", 32, 8));  // the first job's prompt, exact, another seed
  s.back().params.temperature = 0.7;
  s.back().params.seed = 12;
  expect_batched_equals_alone(m, s, 4);
}

TEST(Batching, DreamMixedSettingsEqualAlone) {
  const TinyModel& m = TinyModel::dream();
  std::vector<JobSpec> s;
  s.push_back(job(m, "Once upon a time", 32, 8));
  s.push_back(job(m, "Write a poem about the sea", 48, 12));
  s.back().params.cache = diffusion::CacheMode::kDual;
  s.back().params.threshold = 0.3;
  s.back().params.block_length = 16;
  s.push_back(job(m, "Hello", 32, 8));
  s.back().params.alg = diffusion::DreamAlg::kMaskgitPlus;
  s.back().params.temperature = 0.5;
  s.back().params.top_p = 0.9;
  s.back().params.seed = 3;
  s.push_back(job(m, "What is two plus two?", 32, 16));
  s.back().params.alg = diffusion::DreamAlg::kOrigin;
  s.back().params.temperature = 1.0;
  s.back().params.seed = 4;
  s.back().params.cache = diffusion::CacheMode::kPrefix;
  s.push_back(job(m, "Once", 40, 10));
  s.back().params.cache = diffusion::CacheMode::kDual;
  expect_batched_equals_alone(m, s, 4);
}

/// The statement: one request, alone and in a batch of 4 (with three others of other
/// lengths), the same tokens; exact and dual cache.
TEST(Batching, SameRequestAloneAndInABatchOfFour) {
  const TinyModel& m = TinyModel::llada();
  for (diffusion::CacheMode cache : {diffusion::CacheMode::kNone, diffusion::CacheMode::kDual}) {
    std::vector<JobSpec> s;
    for (const char* p :
         {"Once upon a time", "Hi", "The king had three daughters, and the youngest", "Why"}) {
      s.push_back(job(m, p, 48, 6));
      s.back().params.block_length = 16;  // 3 blocks: refreshes and window steps interleave
      s.back().params.cache = cache;
      s.back().params.temperature = 0.8;
      s.back().params.seed = 7;
    }
    expect_batched_equals_alone(m, s, 4);
  }
}

/// A job cancelled (from its own on_step, as a server does when the client is gone) after its second
/// step runs no third; the jobs beside it are unchanged: each still equals generate() alone.
TEST(Batching, CancelledJobStopsAndLeavesTheOthersUnchanged) {
  const TinyModel& m = TinyModel::llada();
  EngineOptions o;
  o.threads = 2;
  o.max_canvas = 128;
  Engine eng(m.model(), o);
  std::vector<JobSpec> specs{job(m, "Once upon a time", 32, 8), job(m, "Hi", 32, 8),
                             job(m, "The fox", 32, 8)};
  specs[1].params.cache = diffusion::CacheMode::kDual;
  specs[1].params.early_stop = false;  // so it cannot end by itself before the cancel
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<Job> victim;
  std::vector<std::shared_ptr<Job>> jobs;
  jobs.push_back(eng.submit(specs[0]));
  jobs.push_back(eng.submit(specs[1], [&](const StepEvent& e) {
    if (e.step != 1) return;
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return victim != nullptr; });  // submit() has returned
    victim->cancel();
  }));
  {
    std::lock_guard lock(mu);
    victim = jobs[1];
    cv.notify_all();
  }
  jobs.push_back(eng.submit(specs[2]));
  const JobResult cancelled = jobs[1]->wait();
  EXPECT_EQ(cancelled.status, JobStatus::kCancelled);
  EXPECT_EQ(cancelled.error, "cancelled");
  EXPECT_EQ(jobs[1]->steps_run(), 2);
  EXPECT_EQ(cancelled.gen.steps_run, 2);
  int64_t committed = 0;  // 32 tokens in 8 steps: 4 per step
  for (size_t p = specs[1].prompt.size(); p < cancelled.gen.canvas.size(); ++p)
    committed += cancelled.gen.canvas[p] != specs[1].params.mask_id;
  EXPECT_EQ(committed, 8);
  for (size_t i : {0u, 2u}) {
    const JobResult r = jobs[i]->wait();
    ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
    EXPECT_EQ(r.gen.canvas, m.generate_alone(specs[i]).canvas) << "job " << i;
  }
  EXPECT_EQ(jobs[1]->steps_run(), 2);
  EXPECT_EQ(eng.metrics().requests_cancelled, 1);
}

TEST(Batching, StepEventsDescribeTheCanvasChanges) {
  const TinyModel& m = TinyModel::llada();
  EngineOptions o;
  o.threads = 2;
  o.max_canvas = 128;
  Engine eng(m.model(), o);
  JobSpec spec = job(m, "Once upon a time", 32, 8);
  spec.stream_canvas = true;
  const int32_t mask = spec.params.mask_id;
  std::vector<int32_t> last(spec.prompt.begin(), spec.prompt.end());
  last.resize(spec.prompt.size() + 32, mask);
  int64_t steps = 0, stable = 0;
  std::vector<int32_t> streamed;
  auto j = eng.submit(spec, [&](const StepEvent& e) {
    EXPECT_EQ(e.step, steps++);
    EXPECT_EQ(e.prompt_len, static_cast<int64_t>(spec.prompt.size()));
    std::vector<int32_t> changed;
    for (size_t p = 0; p < last.size(); ++p)
      if (last[p] != e.canvas[p]) changed.push_back(static_cast<int32_t>(p));
    EXPECT_EQ(changed, std::vector<int32_t>(e.committed.begin(), e.committed.end()));
    for (int32_t p : changed) EXPECT_EQ(last[p], mask);  // only masked positions are ever written
    last.assign(e.canvas.begin(), e.canvas.end());
    EXPECT_GE(e.stable_answer_len, stable);
    for (int64_t k = stable; k < e.stable_answer_len; ++k) streamed.push_back(e.answer[k]);
    stable = e.stable_answer_len;
  });
  const JobResult r = j->wait();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_EQ(steps, r.gen.steps_run);
  EXPECT_EQ(last, r.gen.canvas);
  EXPECT_EQ(streamed, r.gen.answer);
}

}  // namespace
}  // namespace dllm
