#include "tensor_check.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "channel/channel.h"
#include "tensor/tensor_load.h"

namespace tcgd::recorder {
namespace {

using analyze::CheckStatus;

uint64_t steadyNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

std::optional<TensorCheck::Options> TensorCheck::fromRules(
    const std::vector<collectors::tensor::ProbeRule>& rules) {
  for (const auto& r : rules) {
    if (r.action != collectors::tensor::ProbeAction::kCheck) continue;
    Options o;
    o.reference = r.reference;
    o.abort = r.abort;
    if (r.rtol_given) o.rtol = r.rtol;
    if (r.atol_given) o.atol = r.atol;
    return o;
  }
  return std::nullopt;
}

TensorCheck::TensorCheck(Options options, std::string candidate_path, std::string_view rules_text, Sink sink)
    : options_(std::move(options)), candidate_path_(std::move(candidate_path)), sink_(std::move(sink)) {
  try {
    reference_ = std::make_unique<analyze::TensorRun>(analyze::loadTensorRun(options_.reference));
    reference_run_ = reference_->info().run_name;
  } catch (const std::exception& e) {
    off_reason_ = e.what();
  }
  if (reference_ == nullptr) {
    outcome_.status = CheckStatus::kOff;
    outcome_.detail = "reference " + options_.reference + ": " + off_reason_;
    sink_("tcgd: TCGD_TENSOR=" + std::string(rules_text) + ": check: reference " + options_.reference + ": " +
          off_reason_ + "; checking is off (the job runs, fingerprinted as by fingerprint)");
  }
}

TensorCheck::~TensorCheck() = default;

bool TensorCheck::due(uint64_t now_ns, uint64_t arrived) const {
  if (!on() || latched() || now_ns < next_ns_) return false;
  // Something new, or a step waiting to settle (its missing observations
  // may never come: only time completes it).
  return arrived != arrived_at_last_ || progress_.waiting_step != analyze::kNone32;
}

std::optional<bundle::Frame> TensorCheck::compare(uint64_t now_ns, uint64_t arrived, bool stopping_job) {
  if (!on() || latched()) return std::nullopt;
  const uint64_t start = steadyNs();
  analyze::AnalysisOptions options;
  options.divergence.metrics.rtol = options_.rtol;
  options.divergence.metrics.atol = options_.atol;
  analyze::CheckOutcome outcome;
  try {
    outcome = analyze::checkRun(*reference_, analyze::loadTensorRun(candidate_path_), options, false, now_ns,
                                &progress_);
  } catch (const std::exception& e) {
    // The bundle being written reads back (its frames are whole); should it
    // not, the next comparison tries again.
    outcome.status = CheckStatus::kPending;
    outcome.detail = e.what();
  }
  ++comparisons_;
  arrived_at_last_ = arrived;
  const uint64_t took = steadyNs() - start;
  next_ns_ = now_ns + std::max(kMinIntervalNs, 4 * took);
  outcome_ = std::move(outcome);
  if (!latched()) return std::nullopt;
  stopped_job_ = stopping_job && options_.abort;
  line_ = "tcgd check: " + analyze::checkFailureText(*outcome_.failure);
  if (stopped_job_) line_ += "; stopping the job (exit status " + std::to_string(channel::kCheckExitStatus) + ")";
  sink_(line_);
  return frame(false, now_ns);
}

bundle::Frame TensorCheck::finish(uint64_t now_ns, uint64_t arrived) {
  if (on() && !latched() && arrived == 0) {
    // Nothing probed (a child process that touched CUDA, say): nothing to
    // say on the job's stderr.
    outcome_ = analyze::CheckOutcome{};
    outcome_.status = CheckStatus::kNotCompared;
    outcome_.detail = "nothing was probed in this process";
  } else if (on() && !latched()) {
    analyze::AnalysisOptions options;
    options.divergence.metrics.rtol = options_.rtol;
    options.divergence.metrics.atol = options_.atol;
    try {
      outcome_ = analyze::checkRun(*reference_, analyze::loadTensorRun(candidate_path_), options, true, now_ns,
                                   &progress_);
    } catch (const std::exception& e) {
      outcome_ = analyze::CheckOutcome{};
      outcome_.status = CheckStatus::kNotCompared;
      outcome_.detail = e.what();
    }
    ++comparisons_;
    arrived_at_last_ = arrived;
    if (latched()) {
      line_ = "tcgd check: " + analyze::checkFailureText(*outcome_.failure);
      sink_(line_);
    } else if (outcome_.status == CheckStatus::kPassed) {
      line_ = "tcgd check: passed: " + std::to_string(outcome_.observations) + " observations of " +
              std::to_string(outcome_.launches) + " launches in " + std::to_string(outcome_.steps_compared) +
              " steps compared with " + options_.reference;
      sink_(line_);
    } else {
      line_ = "tcgd check: not compared with " + options_.reference + ": " + outcome_.detail;
      sink_(line_);
    }
  }
  return frame(true, now_ns);
}

bundle::Frame TensorCheck::frame(bool final, uint64_t now_ns) const {
  bundle::Frame frame;
  bundle::TensorCheck* c = frame.mutable_tensor_check();
  c->set_final(final);
  c->set_status(static_cast<uint32_t>(outcome_.status));
  c->set_detail(outcome_.status == CheckStatus::kOff || outcome_.status == CheckStatus::kNotCompared
                    ? outcome_.detail
                    : line_);
  c->set_reference(options_.reference);
  c->set_reference_run(reference_run_);
  c->set_abort(options_.abort);
  c->set_stopped_job(stopped_job_);
  c->set_tolerance_given(options_.rtol.has_value() || options_.atol.has_value());
  c->set_rtol(options_.rtol.value_or(0));
  c->set_atol(options_.atol.value_or(0));
  if (const auto& f = outcome_.failure) {
    c->set_step(f->step);
    c->set_reference_step(f->reference_step);
    c->set_capture(f->capture);
    c->set_replay(f->replay);
    c->set_site(f->site);
    c->set_reference_site(f->reference_site);
    c->set_kernel(f->kernel);
    c->set_invocation(f->invocation);
    c->set_param(f->param);
    c->set_offset(f->offset);
    c->set_metric(f->metric);
    c->set_verdict(f->verdict);
    c->set_reference_value(f->reference_value);
    c->set_candidate_value(f->candidate_value);
    c->set_bound(f->bound);
    c->set_cause(f->cause);
  }
  c->set_observations(outcome_.observations);
  c->set_equal(outcome_.equal);
  c->set_different(outcome_.different);
  c->set_inconclusive(outcome_.inconclusive);
  c->set_unobserved(outcome_.unobserved);
  c->set_launches(outcome_.launches);
  c->set_steps(outcome_.steps_compared);
  c->set_explained_by_random(outcome_.explained_by_random);
  c->set_scratch_only(outcome_.scratch_only);
  c->set_comparisons(comparisons_);
  c->set_time_ns(now_ns);
  return frame;
}

}  // namespace tcgd::recorder
