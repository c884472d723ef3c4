// The check action of TCGD_TENSOR (docs/tensor.md, "Checking"): the
// recorder compares the job's tensor bundle, as it writes it, with a
// reference bundle (a fingerprint or record run of the same program,
// usually eager), and latches the first failure: one line on the job's
// standard error, a TensorCheck frame in the bundle, and with abort the stop
// flag in the channel that ends the job with kCheckExitStatus.
//
//   check:reference=out/eager-p12.tcgd-tensor,abort,rtol=1e-4,atol=1e-6
//
// The comparison is the offline one (tools/analyze/tensor/online_check.h,
// which calls analysis.h's compareLoadedRuns), run on the bundle read back
// from disk: online and offline cannot disagree on how steps pair, which
// launches align, which argument is which, what a verdict is, or what is
// random numbers or scratch. It is paced: the next comparison waits until
// something new has arrived and at least kMinIntervalNs, and four times
// the last comparison's duration, have passed, so it takes at most about a
// fifth of the recorder's time however long the run grows (each comparison
// reads the whole run so far). A failure is therefore latched a little after
// it happened, never a different one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/tensor/probe_rules.h"
#include "tcgd/bundle.pb.h"
#include "tensor/online_check.h"

namespace tcgd::recorder {

class TensorCheck {
 public:
  using Sink = std::function<void(std::string_view line)>;
  static constexpr uint64_t kMinIntervalNs = 100'000'000;

  struct Options {
    std::string reference;  // the rule's reference=, as given
    bool abort = false;
    std::optional<double> rtol, atol;
  };
  // The check rule of `rules` (at most one: the parser refuses a second).
  static std::optional<Options> fromRules(const std::vector<collectors::tensor::ProbeRule>& rules);

  // Loads the reference. When it cannot be read, prints one line naming
  // TCGD_TENSOR (`rules_text`), the path and why, and stays off.
  TensorCheck(Options options, std::string candidate_path, std::string_view rules_text, Sink sink);
  ~TensorCheck();

  bool on() const { return reference_ != nullptr; }
  bool latched() const { return outcome_.status == analyze::CheckStatus::kFailed; }
  // A job to stop: the failure latched under abort.
  bool stopWanted() const { return latched() && options_.abort; }

  // Whether to compare now: `arrived` counts what the bundle has received
  // (sites and observations) so far.
  bool due(uint64_t now_ns, uint64_t arrived) const;
  // Compares the candidate bundle as written so far (the caller flushed its
  // frames). Returns the frame to write when the first failure latched now
  // (and prints its line).
  std::optional<bundle::Frame> compare(uint64_t now_ns, uint64_t arrived, bool stopping_job);
  // At the end: a last comparison (unless one latched) and the final frame;
  // prints the result unless a failure was printed already.
  bundle::Frame finish(uint64_t now_ns, uint64_t arrived);

 private:
  bundle::Frame frame(bool final, uint64_t now_ns) const;

  Options options_;
  std::string candidate_path_;
  Sink sink_;
  std::string off_reason_;
  std::string reference_run_;
  std::unique_ptr<analyze::TensorRun> reference_;
  analyze::CheckProgress progress_;
  analyze::CheckOutcome outcome_;
  std::string line_;  // the failure's line, as printed
  bool stopped_job_ = false;
  uint64_t comparisons_ = 0;
  uint64_t arrived_at_last_ = 0;
  uint64_t next_ns_ = 0;
};

}  // namespace tcgd::recorder
