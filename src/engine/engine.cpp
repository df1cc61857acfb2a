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
#include "engine/sampler_options.h"

namespace dllm::engine {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

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
  std::unique_ptr<forward::Forward> source;
  Backend* backend = nullptr;  ///< source, when it is a device backend
  int64_t n_vocab = 0;

  mutable std::mutex m;
  std::condition_variable cv;
  std::deque<std::shared_ptr<JobImpl>> queue;
  bool stopping = false;
  EngineMetrics metrics;
  double recent_run_ms = 1000;  ///< moving average of finished jobs' run time (Retry-After)
  std::thread scheduler;

  Impl(std::unique_ptr<forward::Forward> src, const EngineOptions& o) : opt(o), source(std::move(src)) {
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
    // Block diffusion rounds the canvas up to whole blocks (diffusion::canvas_length).
    check_canvas_fits(n_prompt, diffusion::canvas_length(spec.params, n_prompt) - n_prompt, opt.max_canvas,
                      "the longest canvas", "max_tokens");
    for (size_t i = 0; i < spec.prompt.size(); ++i)
      if (spec.prompt[i] < 0 || spec.prompt[i] >= n_vocab)
        throw UsageError("prompt token id " + std::to_string(spec.prompt[i]) + " at position " +
                         std::to_string(i) + " is outside the model's " + std::to_string(n_vocab) +
                         " logit rows");
    BackendOptions bo;
    bo.device = backend ? backend->device() : "cpu";
    bo.max_batch = spec.params.cfg_scale > 0 ? 2 : 1;
    bo.cache = spec.params.cache;
    for (std::string& w : check_support(source->capabilities(), bo.device, bo))
      warnings.push_back(std::move(w));
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

  bool should_stop() {
    std::lock_guard lock(m);
    return stopping;
  }

  /// A job being stepped: its sequence (which owns its K/V state; the scheduler thread's alone).
  struct Active {
    std::shared_ptr<JobImpl> job;
    std::unique_ptr<diffusion::Sequence> seq;
    Clock::time_point started;
  };
  std::vector<Active> active;

  void end_job(JobImpl& job, JobStatus status, std::string error, diffusion::GenerateResult gen,
               double queue_ms, double run_ms) {
    JobResult r;
    r.status = status;
    r.error = std::move(error);
    r.gen = std::move(gen);
    r.gen.warnings = job.warnings;
    r.queue_ms = queue_ms;
    r.run_ms = run_ms;
    record_end(status, run_ms);
    job.finish(std::move(r));
  }

  /// Ends active[i] (its sequence, and so its K/V state, goes). The active gauge drops before the
  /// outcome is counted, so a reader who sees the outcome sees the job gone.
  void end_active(size_t i, JobStatus status, std::string error) {
    Active a = std::move(active[i]);
    active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
    {
      std::lock_guard lock(m);
      metrics.active = static_cast<int64_t>(active.size());
    }
    const auto now = Clock::now();
    diffusion::GenerateResult gen = a.seq ? a.seq->result() : diffusion::GenerateResult{};
    end_job(*a.job, status, std::move(error), std::move(gen), ms_between(a.job->submitted, a.started),
            ms_between(a.started, now));
  }

  /// Moves queued jobs into the active set (up to `parallel`) and builds their sequences.
  void admit() {
    std::vector<std::shared_ptr<JobImpl>> taken;
    {
      std::lock_guard lock(m);
      while (!queue.empty() && active.size() + taken.size() < static_cast<size_t>(opt.parallel)) {
        taken.push_back(queue.front());
        queue.pop_front();
      }
      metrics.queue_depth = static_cast<int64_t>(queue.size());
      metrics.active = static_cast<int64_t>(active.size() + taken.size());
    }
    for (auto& job : taken) {
      Active a;
      a.job = job;
      a.started = Clock::now();
      active.push_back(std::move(a));
      const size_t i = active.size() - 1;
      if (job->cancelled.load()) {
        end_active(i, JobStatus::kCancelled, "cancelled");
        continue;
      }
      try {
        active[i].seq = std::make_unique<diffusion::Sequence>(job->spec.prompt, job->spec.params, n_vocab,
                                                              callbacks_for(*job));
      } catch (const std::exception& e) {
        end_active(i, JobStatus::kFailed, e.what());
        continue;
      }
      if (active[i].seq->done()) end_active(i, JobStatus::kOk, "");
    }
  }

  /// The sequence's on_step: the job's counter, the committed tokens, the job's StepEvent.
  diffusion::SamplerCallbacks callbacks_for(JobImpl& job) {
    diffusion::SamplerCallbacks cb;
    const auto n_prompt = static_cast<int64_t>(job.spec.prompt.size());
    cb.on_step = [this, &job, n_prompt](const diffusion::StepInfo& s) {
      job.steps.fetch_add(1);
      step_committed_ += static_cast<int64_t>(s.positions.size());
      if (!job.on_step) return;
      StepEvent e;
      e.step = s.step;
      e.prompt_len = n_prompt;
      e.stable_answer_len = s.stable_answer_len;
      e.answer_final = s.answer_final;
      e.block_begin = s.block_begin;
      e.block_end = s.block_end;
      e.step_ms = s.forward_ms + s.sample_ms;
      e.answer = s.canvas.subspan(static_cast<size_t>(n_prompt), static_cast<size_t>(s.stable_answer_len));
      if (job.spec.stream_canvas) {
        e.canvas = s.canvas;
        e.committed = s.positions;
      }
      job.on_step(e);
    };
    return cb;
  }
  int64_t step_committed_ = 0;  ///< tokens committed in the scheduler step in progress

  /// One scheduler step: the next step of every active sequence, their segments packed into as few
  /// forward passes as the source's capabilities allow (max_rows activation rows and max_segments
  /// segments per pass).
  void step() {
    const auto t0 = Clock::now();
    step_committed_ = 0;
    const forward::Capabilities caps = source->capabilities();
    std::vector<forward::Segment> segs;
    std::vector<size_t> who;  // active index of each sequence in the pass
    std::vector<bool> failed(active.size(), false);
    std::vector<std::string> why(active.size());
    int64_t passes = 0, seq_steps = 0;
    auto flush = [&] {
      if (segs.empty()) return;
      const auto tf = Clock::now();
      try {
        source->forward(segs);
      } catch (const std::exception& e) {
        for (size_t i : who) failed[i] = true, why[i] = e.what();
      }
      const double forward_ms = ms_between(tf, Clock::now());
      ++passes;
      for (size_t i : who) {
        if (failed[i]) continue;
        try {
          active[i].seq->accept(forward_ms);
          ++seq_steps;
        } catch (const std::exception& e) {
          failed[i] = true;
          why[i] = e.what();
        }
      }
      segs.clear();
      who.clear();
    };
    int64_t rows = 0;
    for (size_t i = 0; i < active.size(); ++i) {
      const std::span<const forward::Segment> next = active[i].seq->next();
      int64_t n = 0;
      for (const forward::Segment& s : next) n += s.n_rows();
      const auto n_segs = static_cast<int64_t>(segs.size() + next.size());
      if (!segs.empty() && (rows + n > caps.max_rows || n_segs > caps.max_segments)) {
        flush();
        rows = 0;
      }
      segs.insert(segs.end(), next.begin(), next.end());
      who.push_back(i);
      rows += n;
    }
    flush();
    const double ms = ms_between(t0, Clock::now());
    {
      std::lock_guard lock(m);
      metrics.forward_passes += passes;
      metrics.sequence_steps += seq_steps;
      metrics.tokens_committed += step_committed_;
      for (size_t i = 0; i < metrics.step_ms_bounds.size(); ++i)
        if (ms <= metrics.step_ms_bounds[i]) ++metrics.step_ms_buckets[i];
      metrics.step_ms_sum += ms;
      ++metrics.step_ms_count;
    }
    for (size_t i = active.size(); i-- > 0;) {
      if (failed[i])
        end_active(i, JobStatus::kFailed, why[i]);
      else if (active[i].seq->done())
        end_active(i, JobStatus::kOk, "");
    }
  }

  /// The scheduler thread: admit, drop cancelled jobs, step, until shutdown.
  void loop() {
    for (;;) {
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stopping || !queue.empty() || !active.empty(); });
        if (stopping) break;
      }
      admit();
      for (size_t i = active.size(); i-- > 0;)
        if (active[i].job->cancelled.load()) end_active(i, JobStatus::kCancelled, "cancelled");
      if (!active.empty()) step();
    }
    while (!active.empty())
      end_active(active.size() - 1, JobStatus::kShutdown, "the engine is shutting down");
    std::deque<std::shared_ptr<JobImpl>> left;
    {
      std::lock_guard lock(m);
      left.swap(queue);
      metrics.queue_depth = 0;
    }
    for (auto& job : left)
      end_job(*job, JobStatus::kShutdown, "the engine is shutting down", {},
              ms_between(job->submitted, Clock::now()), 0);
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

std::unique_ptr<forward::Forward> make_source(const model::Model& model, const EngineOptions& o) {
  check_options(o);
  BackendOptions bo;
  bo.device = o.device;
  bo.gpu_gemm = o.gpu_gemm;
  bo.threads = o.threads;
  bo.isa = o.isa;
  bo.max_tokens = o.max_canvas;
  bo.max_batch = std::max(2, o.parallel);  // rows for every active canvas; 2: a CFG pair
  std::unique_ptr<Backend> b = make_backend(model, bo);
  b->warnings.clear();  // about a CFG batch the device runs canvas by canvas: check() repeats it per job
  return b;
}

}  // namespace

Engine::Engine(const model::Model& model, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(make_source(model, options), options)) {
  impl_->start();
}

Engine::Engine(std::unique_ptr<forward::Forward> source, const EngineOptions& options) {
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

std::vector<std::string> Engine::notes() const {
  return impl_->backend ? impl_->backend->notes : std::vector<std::string>{};
}

std::string Engine::describe() const {
  return impl_->backend ? impl_->backend->describe() : "";
}

const EngineOptions& Engine::options() const {
  return impl_->opt;
}

}  // namespace dllm::engine
