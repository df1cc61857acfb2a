// The batching engine: one model on one device, one scheduler thread, and many generation jobs.
// Up to EngineOptions::parallel jobs are active at once; each step of the scheduler runs the next
// denoising step of every active job, their segments packed into one forward pass as far as the
// device's capabilities allow (the CPU: all of them; the GPU: one segment per pass); the others wait
// in a bounded queue. Each job's sequence owns its K/V state: nothing is kept per slot. Jobs of any settings
// batch together (schedules, caches, thresholds, lengths; a CFG pair takes two canvases' rows). `dllm serve`
// (src/server) submits one job per HTTP request; the results of a job do not depend on what else runs with
// it.
//
// Threads: submit(), metrics(), shutdown() and every Job method may be called from any thread. The
// on_step callback runs on the scheduler thread: it must return quickly and must not call back into
// the Engine except Job::cancel().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "diffusion/sampler.h"
#include "forward/pass.h"

namespace dllm::model {
class Model;
}

namespace dllm::engine {

/// submit() when the queue holds EngineOptions::queue jobs already. retry_after_s: a hint for the
/// client (HTTP Retry-After), seconds until a slot is likely free (at least 1), estimated from the
/// recent jobs' run time and the queue depth.
class QueueFull : public Error {
 public:
  QueueFull(const std::string& message, int64_t retry_after_s)
      : Error(message), retry_after_s_(retry_after_s) {}
  int64_t retry_after_s() const { return retry_after_s_; }

 private:
  int64_t retry_after_s_;
};

/// One generation: the prompt ids (already templated and tokenized) and the sampler settings
/// (engine::sampler_params fills them as `dllm run` does).
struct JobSpec {
  std::vector<int32_t> prompt;
  diffusion::SamplerParams params;
  /// StepEvent::canvas and ::committed are filled (else empty): a UI that draws the denoising.
  bool stream_canvas = false;
};

/// One step of one job, as the on_step callback sees it. Spans are valid only during the callback.
struct StepEvent {
  int64_t step = 0;        ///< 0-based forward passes of this job so far (StepInfo::step)
  int64_t prompt_len = 0;  ///< canvas[0, prompt_len) is the prompt
  /// Leading answer tokens (canvas[prompt_len ..)) that can no longer change: a streaming client may
  /// print answer[0, stable_answer_len) now (StepInfo::stable_answer_len).
  int64_t stable_answer_len = 0;
  bool answer_final = false;           ///< the answer can no longer change
  std::span<const int32_t> answer;     ///< canvas[prompt_len, prompt_len + stable_answer_len)
  std::span<const int32_t> canvas;     ///< stream_canvas: the whole canvas after this step (masks included)
  std::span<const int32_t> committed;  ///< stream_canvas: canvas positions committed this step, increasing
  /// Canvas positions [block_begin, block_end) of the block this step worked on (StepInfo; the whole
  /// answer when the schedule has no blocks).
  int64_t block_begin = 0, block_end = 0;
  double step_ms = 0;  ///< this step's forward pass (the batched pass it was part of) and sampling, ms
};

/// How a job ended.
enum class JobStatus {
  kOk,         ///< gen holds the result
  kCancelled,  ///< Job::cancel() before it finished; gen holds the canvas as far as it got
  kShutdown,   ///< Engine::shutdown() while it waited or ran
  kFailed,     ///< the forward pass or the sampler threw; error says what
};

struct JobResult {
  JobStatus status = JobStatus::kOk;
  diffusion::GenerateResult gen;  ///< complete for kOk; for the others the canvas as far as it got
  std::string error;              ///< empty for kOk; one line otherwise
  double queue_ms = 0;            ///< from submit() to the job's first step
  double run_ms = 0;              ///< from the first step to the end
};

/// A submitted job. The Engine keeps it alive until it ends; the caller's shared_ptr may outlive
/// the Engine (wait() then returns at once).
class Job {
 public:
  virtual ~Job() = default;
  /// Asks the job to stop: it ends (kCancelled) before its next step, so steps_run() stops
  /// advancing. Idempotent; no effect on a job that has ended.
  virtual void cancel() = 0;
  /// Blocks until the job ends; returns its result (every call the same).
  virtual JobResult wait() = 0;
  /// True once the job has ended (wait() would not block).
  virtual bool done() const = 0;
  /// Forward passes this job has run so far.
  virtual int64_t steps_run() const = 0;
};

struct EngineOptions {
  int parallel = 4;  ///< jobs stepped together (active canvases), >= 1
  int queue = 64;    ///< jobs waiting beyond the active ones, >= 0; submit() throws QueueFull beyond
  // The backend (engine/backend.h BackendOptions; Engine(model, options) builds it).
  std::string device = "cpu";     ///< cpu | gpu | auto
  std::string gpu_gemm = "int8";  ///< int8 | cublas
  int threads = 0;                ///< CPU forward threads; 0 = physical cores
  std::string isa;                ///< CPU kernel path; "" = choose_isa's default
  /// Longest canvas (prompt + max_tokens) a job may have. Required (> 0). The CPU backend's
  /// activation buffers may grow to max(2, parallel) x max_canvas rows (every active canvas in one
  /// pass; 2: a CFG pair) as the passes need them, and each job's K/V state (dual / prefix) to
  /// n_layer x its canvas K and V rows, freed when the job ends.
  int64_t max_canvas = 0;
};

/// Counters since the engine started (a snapshot; Prometheus names in docs/serving.md).
struct EngineMetrics {
  int64_t requests_submitted = 0;  ///< jobs accepted by submit()
  int64_t requests_rejected = 0;   ///< submit() refused: QueueFull
  int64_t requests_ok = 0, requests_cancelled = 0, requests_failed = 0, requests_shutdown = 0;
  int64_t queue_depth = 0;       ///< jobs waiting now
  int64_t active = 0;            ///< jobs being stepped now (active canvases)
  int64_t forward_passes = 0;    ///< forward passes of the backend (a packed batch counts once)
  int64_t sequence_steps = 0;    ///< job steps run (a batch of 4 jobs' steps counts 4)
  int64_t tokens_committed = 0;  ///< canvas positions committed, all jobs
  /// Scheduler step latency (one batched forward pass and the sampling of every job in it), as a
  /// Prometheus histogram: step_ms_buckets[i] counts the steps of at most step_ms_bounds[i] ms
  /// (cumulative; the last bound is +inf), step_ms_sum their total.
  std::vector<double> step_ms_bounds;
  std::vector<int64_t> step_ms_buckets;
  double step_ms_sum = 0;
  int64_t step_ms_count = 0;
};

class Engine {
 public:
  /// Builds the backend (engine::make_backend with options' device fields, buffers for
  /// max_canvas) and starts the scheduler thread. `model` must outlive the Engine. Throws
  /// dllm::UsageError for bad options (parallel < 1, queue < 0, max_canvas <= 0) and what
  /// make_backend throws.
  Engine(const model::Model& model, const EngineOptions& options);
  /// Over any forward::Forward (tests: scripted logits). Its capabilities() say what runs natively.
  Engine(std::unique_ptr<forward::Forward> source, const EngineOptions& options);
  /// shutdown().
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Checks a job as submit() would, without queueing it; returns its warnings (check_params').
  /// Throws dllm::UsageError with `run`'s wording (diffusion::check_params), or naming both lengths
  /// when prompt + max_tokens exceeds max_canvas, or when the device lacks the cached steps the
  /// cache mode needs (engine::check_support); dllm::Error for what check_params throws as Error.
  std::vector<std::string> check(const JobSpec& spec) const;

  /// Queues a job; on_step (may be empty) runs after each of its steps, on the scheduler thread.
  /// Throws what check() throws, QueueFull when the queue is full, dllm::Error after shutdown().
  std::shared_ptr<Job> submit(JobSpec spec, std::function<void(const StepEvent&)> on_step = {});

  EngineMetrics metrics() const;

  /// Stops the scheduler: the step in progress finishes, then every active and queued job ends
  /// with kShutdown ("the engine is shutting down"), and the thread is joined. Idempotent.
  void shutdown();

  /// The backend's logit rows per position.
  int64_t n_vocab() const;
  /// One line naming the device and kernels ("device: cpu (avx2, 2 threads)"); "" over a bare source.
  std::string describe() const;
  /// The backend's notes (Backend::notes: why --device auto stayed on the CPU although a GPU is there).
  std::vector<std::string> notes() const;
  const EngineOptions& options() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::engine
