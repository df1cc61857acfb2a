// The engine's contract: a job's tokens are those diffusion::generate gives for the same prompt and
// settings on a backend of its own (the independent computation: nothing else in that run;
// batching_test.cpp covers mixed settings and caches); the queue bound (QueueFull with a Retry-After hint),
// cancellation (the step counter stops advancing), shutdown with jobs in flight (each ends with kShutdown,
// nothing hangs), and the counters.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace dllm {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::Job;
using engine::JobResult;
using engine::JobSpec;
using engine::JobStatus;
using engine::QueueFull;
using test::TinyModel;

/// A source whose every forward pass waits until the test lets it run (release(n) allows n more
/// passes): the test decides when each step of the scheduler happens. One segment per pass and no
/// K/V state (forward::Capabilities' defaults). Logits favour token 5.
class GatedSource : public forward::Forward {
 public:
  explicit GatedSource(int64_t n_vocab) : n_vocab_(n_vocab) {}
  int64_t n_vocab() const override { return n_vocab_; }
  forward::Capabilities capabilities() const override {
    forward::Capabilities caps;
    caps.max_rows = int64_t{1} << 30;
    return caps;
  }
  void forward(std::span<const forward::Segment> segments) override {
    {
      std::unique_lock lock(m_);
      ++waiting_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return allowed_ > 0; });
      --allowed_;
      --waiting_;
      ++passes_;
      cv_.notify_all();
    }
    for (const forward::Segment& s : segments)
      for (size_t j = 0; j < s.logit_rows.size(); ++j)
        for (int64_t v = 0; v < n_vocab_; ++v) s.logits[j * n_vocab_ + v] = v == 5 ? 1.0f : 0.0f;
  }
  void release(int64_t n) {
    std::lock_guard lock(m_);
    allowed_ += n;
    cv_.notify_all();
  }
  /// Blocks until a forward pass waits at the gate and `passes` passes have run.
  void wait_at_gate(int64_t passes) {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return waiting_ > 0 && passes_ == passes; });
  }

 private:
  int64_t n_vocab_;
  std::mutex m_;
  std::condition_variable cv_;
  int64_t allowed_ = 0, waiting_ = 0, passes_ = 0;
};

diffusion::SamplerParams gated_params(int64_t max_tokens) {
  diffusion::SamplerParams p;
  p.max_tokens = max_tokens;
  p.steps = max_tokens;
  p.block_length = max_tokens;
  p.mask_id = 0;
  p.early_stop = false;
  return p;
}

JobSpec gated_job(int64_t max_tokens) {
  return JobSpec{{1, 2, 3}, gated_params(max_tokens), false};
}

EngineOptions small_options(int parallel, int queue) {
  EngineOptions o;
  o.parallel = parallel;
  o.queue = queue;
  o.max_canvas = 64;
  return o;
}

TEST(Engine, TokensAreThoseOfGenerateAlone) {
  const TinyModel& m = TinyModel::llada();
  EngineOptions o;
  o.threads = 1;
  o.max_canvas = 128;
  Engine eng(m.model(), o);
  std::vector<JobSpec> specs;
  for (uint64_t seed : {1u, 2u, 3u}) {
    JobSpec s{m.prompt("Once upon a time"), m.params(32, 8), false};
    s.params.temperature = 0.7;
    s.params.seed = seed;
    specs.push_back(s);
  }
  std::vector<std::shared_ptr<Job>> jobs;
  for (const JobSpec& s : specs) jobs.push_back(eng.submit(s));
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobResult r = jobs[i]->wait();
    ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
    const diffusion::GenerateResult alone = m.generate_alone(specs[i]);
    EXPECT_EQ(r.gen.canvas, alone.canvas) << "job " << i;
    EXPECT_EQ(r.gen.steps_run, alone.steps_run);
    EXPECT_EQ(jobs[i]->steps_run(), alone.steps_run);
  }
  const engine::EngineMetrics mt = eng.metrics();
  EXPECT_EQ(mt.requests_submitted, 3);
  EXPECT_EQ(mt.requests_ok, 3);
  EXPECT_EQ(mt.tokens_committed, 3 * 32);
  EXPECT_EQ(mt.sequence_steps, jobs[0]->steps_run() + jobs[1]->steps_run() + jobs[2]->steps_run());
  // One forward pass per scheduler step here (every request fits one pass), each running the step
  // of every active job.
  EXPECT_EQ(mt.forward_passes, mt.step_ms_count);
  EXPECT_LE(mt.forward_passes, mt.sequence_steps);
  EXPECT_EQ(mt.step_ms_buckets.back(), mt.step_ms_count);
}

TEST(Engine, QueueFullCarriesARetryHint) {
  auto src = std::make_unique<GatedSource>(16);
  GatedSource& gate = *src;
  Engine eng(std::move(src), small_options(1, 1));
  auto running = eng.submit(gated_job(4));
  gate.wait_at_gate(0);  // the first job is active, stopped at its first pass
  auto queued = eng.submit(gated_job(4));
  try {
    eng.submit(gated_job(4));
    ADD_FAILURE() << "no QueueFull";
  } catch (const QueueFull& e) {
    EXPECT_GE(e.retry_after_s(), 1);
    EXPECT_NE(std::string(e.what()).find("queue is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(eng.metrics().requests_rejected, 1);
  EXPECT_EQ(eng.metrics().queue_depth, 1);
  gate.release(100);
  EXPECT_EQ(running->wait().status, JobStatus::kOk);
  EXPECT_EQ(queued->wait().status, JobStatus::kOk);
}

TEST(Engine, CancelledJobStopsAdvancing) {
  auto src = std::make_unique<GatedSource>(16);
  GatedSource& gate = *src;
  Engine eng(std::move(src), small_options(1, 4));
  auto job = eng.submit(gated_job(8));
  gate.release(2);
  gate.wait_at_gate(2);  // two steps done, the third waits
  EXPECT_EQ(job->steps_run(), 2);
  job->cancel();
  gate.release(100);
  const JobResult r = job->wait();
  EXPECT_EQ(r.status, JobStatus::kCancelled);
  // The pass that was waiting may finish its step; none after it runs.
  EXPECT_LE(job->steps_run(), 3);
  const int64_t after = job->steps_run();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(job->steps_run(), after);
  EXPECT_EQ(eng.metrics().requests_cancelled, 1);
  // The engine goes on with the next job.
  EXPECT_EQ(eng.submit(gated_job(4))->wait().status, JobStatus::kOk);
}

TEST(Engine, ShutdownEndsJobsInFlightAndQueued) {
  auto src = std::make_unique<GatedSource>(16);
  GatedSource& gate = *src;
  auto eng = std::make_unique<Engine>(std::move(src), small_options(1, 4));
  auto active = eng->submit(gated_job(8));
  gate.wait_at_gate(0);
  auto queued = eng->submit(gated_job(8));
  std::thread stopper([&] { eng->shutdown(); });
  // Wait until shutdown has begun (submit says so before it checks anything), then let the step run.
  for (;;) {
    try {
      eng->check(gated_job(4));
      eng->submit(JobSpec{});  // an empty spec fails its checks while the engine runs
    } catch (const Error& e) {
      if (std::string(e.what()) == "the engine is shutting down: no new jobs") break;
    }
    std::this_thread::yield();
  }
  gate.release(100);
  stopper.join();
  EXPECT_EQ(active->wait().status, JobStatus::kShutdown);
  const JobResult q = queued->wait();
  EXPECT_EQ(q.status, JobStatus::kShutdown);
  EXPECT_EQ(q.error, "the engine is shutting down");
  EXPECT_THROW(eng->submit(gated_job(4)), Error);
  eng.reset();  // a second shutdown (the destructor) is harmless
}

TEST(Engine, SubmitChecksAsRunDoes) {
  Engine eng(std::make_unique<GatedSource>(16), small_options(1, 4));
  JobSpec bad = gated_job(4);
  bad.params.steps = 3;
  bad.params.block_length = 2;  // 2 blocks, 3 steps
  test::expect_error(
      [&] { eng.submit(bad); },
      "steps 3 is not a multiple of the block count 2 (max_tokens 4 / block_length 2): use steps 2 or 4");
  JobSpec longer = gated_job(64);
  test::expect_error(
      [&] { eng.submit(longer); },
      "the canvas is 67 tokens (prompt 3 + max_tokens 64), longer than the longest canvas of 64 "
      "tokens: use max_tokens 61 or less, or shorten the prompt");
  JobSpec cached = gated_job(4);
  cached.params.cache = diffusion::CacheMode::kDual;
  EXPECT_THROW(eng.submit(cached), UsageError);  // a source without K/V states
}

}  // namespace
}  // namespace dllm
