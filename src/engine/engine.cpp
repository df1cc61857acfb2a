// Engine (engine.h): the job queue, the scheduler thread and the counters.
#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "engine/backend.h"

namespace dllm::engine {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Thrown out of the sampler's on_step to end a job that was cancelled or shut down.
struct StopJob {
  JobStatus status;
};

class JobImpl : public Job {
 public:
  JobImpl(JobSpec s, std::function<void(const StepEvent&)> cb, std::vector<std::string> w)
      : spec(std::move(s)), on_step(std::move(cb)), warnings(std::move(w)), submitted(Clock::now()) {}

  void cancel() override { cancelled.store(true); }
  JobResult wait() override {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return finished_; });
    return result_;
  }
  bool done() const override {
    std::lock_guard lock(m_);
    return finished_;
  }
  int64_t steps_run() const override { return steps.load(); }

  /// Ends the job (once): wakes every wait().
  void finish(JobResult r) {
    std::lock_guard lock(m_);
    if (finished_) return;
    result_ = std::move(r);
    finished_ = true;
    cv_.notify_all();
  }

  const JobSpec spec;
  const std::function<void(const StepEvent&)> on_step;
  const std::vector<std::string> warnings;
  const Clock::time_point submitted;
  std::atomic<bool> cancelled{false};
  std::atomic<int64_t> steps{0};

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool finished_ = false;
  JobResult result_;
};

const std::vector<double>& step_bounds() {
  static const std::vector<double> b{
      1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, std::numeric_limits<double>::infinity()};
  return b;
}

}  // namespace

struct Engine::Impl {
  EngineOptions opt;
  std::unique_ptr<diffusion::LogitsSource> source;
  Backend* backend = nullptr;  ///< source, when it is a device backend
  int64_t n_vocab = 0;

  mutable std::mutex m;
  std::condition_variable cv;
  std::deque<std::shared_ptr<JobImpl>> queue;
  bool stopping = false;
  EngineMetrics metrics;
  double recent_run_ms = 1000;  ///< moving average of finished jobs' run time (Retry-After)
  std::thread scheduler;

  Impl(std::unique_ptr<diffusion::LogitsSource> src, const EngineOptions& o)
      : opt(o), source(std::move(src)) {
    backend = dynamic_cast<Backend*>(source.get());
    n_vocab = source->n_vocab();
    metrics.step_ms_bounds = step_bounds();
    metrics.step_ms_buckets.assign(step_bounds().size(), 0);
  }

  void start() {
    scheduler = std::thread([this] { loop(); });
  }

  std::vector<std::string> check(const JobSpec& spec) const {
    const auto n_prompt = static_cast<int64_t>(spec.prompt.size());
    std::vector<std::string> warnings = diffusion::check_params(spec.params, n_prompt, n_vocab);
    const std::string cap = std::to_string(opt.max_canvas);
    if (n_prompt >= opt.max_canvas)
      throw UsageError("the prompt is " + std::to_string(n_prompt) + " tokens and the longest canvas is " +
                       cap + " tokens, which leaves no room for an answer: shorten the prompt");
    if (n_prompt + spec.params.max_tokens > opt.max_canvas)
      throw UsageError("the canvas is " + std::to_string(n_prompt + spec.params.max_tokens) +
                       " tokens (prompt " + std::to_string(n_prompt) + " + max_tokens " +
                       std::to_string(spec.params.max_tokens) + "), longer than the longest canvas of " +
                       cap + " tokens: use max_tokens " + std::to_string(opt.max_canvas - n_prompt) +
                       " or less, or shorten the prompt");
    for (size_t i = 0; i < spec.prompt.size(); ++i)
      if (spec.prompt[i] < 0 || spec.prompt[i] >= n_vocab)
        throw UsageError("prompt token id " + std::to_string(spec.prompt[i]) + " at position " +
                         std::to_string(i) + " is outside the model's " + std::to_string(n_vocab) +
                         " logit rows");
    BackendOptions bo;
    bo.device = backend ? backend->device() : "cpu";
    bo.max_batch = spec.params.cfg_scale > 0 ? 2 : 1;
    bo.cache = spec.params.cache;
    for (std::string& w : check_support(source->support(), bo.device, bo)) warnings.push_back(std::move(w));
    return warnings;
  }

  std::shared_ptr<Job> submit(JobSpec spec, std::function<void(const StepEvent&)> on_step) {
    if (should_stop()) throw Error("the engine is shutting down: no new jobs");
    std::vector<std::string> warnings = check(spec);
    auto job = std::make_shared<JobImpl>(std::move(spec), std::move(on_step), std::move(warnings));
    std::lock_guard lock(m);
    if (stopping) throw Error("the engine is shutting down: no new jobs");
    if (static_cast<int64_t>(queue.size()) >= opt.queue) {
      ++metrics.requests_rejected;
      const double waiting = static_cast<double>(queue.size() + metrics.active) / opt.parallel;
      const auto retry =
          std::max<int64_t>(1, static_cast<int64_t>(std::ceil(recent_run_ms * waiting / 1000.0)));
      throw QueueFull("the queue is full (" + std::to_string(queue.size()) + " jobs waiting, " +
                          std::to_string(metrics.active) + " running): retry in " + std::to_string(retry) +
                          " s",
                      retry);
    }
    ++metrics.requests_submitted;
    queue.push_back(job);
    metrics.queue_depth = static_cast<int64_t>(queue.size());
    cv.notify_all();
    return job;
  }

  void record_end(JobStatus s, double run_ms) {
    std::lock_guard lock(m);
    switch (s) {
      case JobStatus::kOk:
        ++metrics.requests_ok;
        recent_run_ms = 0.8 * recent_run_ms + 0.2 * run_ms;
        break;
      case JobStatus::kCancelled:
        ++metrics.requests_cancelled;
        break;
      case JobStatus::kShutdown:
        ++metrics.requests_shutdown;
        break;
      case JobStatus::kFailed:
        ++metrics.requests_failed;
        break;
    }
  }

  void record_step(double ms, int64_t committed) {
    std::lock_guard lock(m);
    ++metrics.forward_passes;
    ++metrics.sequence_steps;
    metrics.tokens_committed += committed;
    for (size_t i = 0; i < metrics.step_ms_bounds.size(); ++i)
      if (ms <= metrics.step_ms_bounds[i]) ++metrics.step_ms_buckets[i];
    metrics.step_ms_sum += ms;
    ++metrics.step_ms_count;
  }

  bool should_stop() {
    std::lock_guard lock(m);
    return stopping;
  }

  /// Serial scheduler: one job at a time, each through diffusion::generate.
  void loop() {
    for (;;) {
      std::shared_ptr<JobImpl> job;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) break;
        job = queue.front();
        queue.pop_front();
        metrics.queue_depth = static_cast<int64_t>(queue.size());
        metrics.active = 1;
      }
      run_one(*job);
      std::lock_guard lock(m);
      metrics.active = 0;
    }
    std::deque<std::shared_ptr<JobImpl>> left;
    {
      std::lock_guard lock(m);
      left.swap(queue);
      metrics.queue_depth = 0;
    }
    for (auto& job : left) {
      JobResult r;
      r.status = JobStatus::kShutdown;
      r.error = "the engine is shutting down";
      r.queue_ms = ms_between(job->submitted, Clock::now());
      record_end(r.status, 0);
      job->finish(std::move(r));
    }
  }

  void run_one(JobImpl& job) {
    const auto t0 = Clock::now();
    JobResult r;
    r.queue_ms = ms_between(job.submitted, t0);
    if (job.cancelled.load()) {
      r.status = JobStatus::kCancelled;
      r.error = "cancelled";
      record_end(r.status, 0);
      job.finish(std::move(r));
      return;
    }
    const auto n_prompt = static_cast<int64_t>(job.spec.prompt.size());
    diffusion::SamplerCallbacks cb;
    cb.on_step = [&](const diffusion::StepInfo& s) {
      job.steps.fetch_add(1);
      record_step(s.forward_ms + s.sample_ms, static_cast<int64_t>(s.positions.size()));
      if (job.on_step) {
        StepEvent e;
        e.step = s.step;
        e.prompt_len = n_prompt;
        e.stable_answer_len = s.stable_answer_len;
        e.answer_final = s.answer_final;
        e.answer = s.canvas.subspan(static_cast<size_t>(n_prompt), static_cast<size_t>(s.stable_answer_len));
        if (job.spec.stream_canvas) {
          e.canvas = s.canvas;
          e.committed = s.positions;
        }
        job.on_step(e);
      }
      if (job.cancelled.load()) throw StopJob{JobStatus::kCancelled};
      if (should_stop()) throw StopJob{JobStatus::kShutdown};
    };
    try {
      r.gen = diffusion::generate(*source, job.spec.prompt, job.spec.params, cb);
      r.status = JobStatus::kOk;
    } catch (const StopJob& s) {
      r.status = s.status;
      r.error = s.status == JobStatus::kCancelled ? "cancelled" : "the engine is shutting down";
    } catch (const std::exception& e) {
      r.status = JobStatus::kFailed;
      r.error = e.what();
    }
    r.run_ms = ms_between(t0, Clock::now());
    record_end(r.status, r.run_ms);
    job.finish(std::move(r));
  }

  void shutdown() {
    {
      std::lock_guard lock(m);
      stopping = true;
      cv.notify_all();
    }
    if (scheduler.joinable()) scheduler.join();
  }
};

namespace {

void check_options(const EngineOptions& o) {
  if (o.parallel < 1)
    throw UsageError("--parallel must be at least 1 (got " + std::to_string(o.parallel) + ")");
  if (o.queue < 0) throw UsageError("--queue must be >= 0 (got " + std::to_string(o.queue) + ")");
  if (o.max_canvas <= 0)
    throw UsageError("the longest canvas must be at least 1 token (got " + std::to_string(o.max_canvas) +
                     ")");
}

std::unique_ptr<diffusion::LogitsSource> make_source(const model::Model& model, const EngineOptions& o) {
  check_options(o);
  BackendOptions bo;
  bo.device = o.device;
  bo.gpu_gemm = o.gpu_gemm;
  bo.threads = o.threads;
  bo.isa = o.isa;
  bo.max_tokens = o.max_canvas;
  bo.max_batch = 2;  // a CFG pair
  std::unique_ptr<Backend> b = make_backend(model, bo);
  b->warnings.clear();  // about a CFG batch the device runs canvas by canvas: check() repeats it per job
  return b;
}

}  // namespace

Engine::Engine(const model::Model& model, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(make_source(model, options), options)) {
  impl_->start();
}

Engine::Engine(std::unique_ptr<diffusion::LogitsSource> source, const EngineOptions& options) {
  check_options(options);
  impl_ = std::make_unique<Impl>(std::move(source), options);
  impl_->start();
}

Engine::~Engine() {
  shutdown();
}

std::vector<std::string> Engine::check(const JobSpec& spec) const {
  return impl_->check(spec);
}

std::shared_ptr<Job> Engine::submit(JobSpec spec, std::function<void(const StepEvent&)> on_step) {
  return impl_->submit(std::move(spec), std::move(on_step));
}

EngineMetrics Engine::metrics() const {
  std::lock_guard lock(impl_->m);
  return impl_->metrics;
}

void Engine::shutdown() {
  impl_->shutdown();
}

int64_t Engine::n_vocab() const {
  return impl_->n_vocab;
}

std::string Engine::describe() const {
  return impl_->backend ? impl_->backend->describe() : "";
}

const EngineOptions& Engine::options() const {
  return impl_->opt;
}

}  // namespace dllm::engine
