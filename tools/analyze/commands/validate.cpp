// `tcgd-analyze validate BUNDLE`: is the bundle whole and complete?
#include <fmt/format.h>

#include <iterator>
#include <optional>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "model/tensor_frames.h"

namespace tcgd::analyze {
namespace {

int runValidate(const ParsedArgs& args, Output& out) {
  LoadOptions options;
  options.decode_batches = true;  // a batch whose columns do not line up is a finding
  const Bundle bundle = Bundle::load(args.positional(0), options);

  std::vector<std::string> findings;
  if (const auto& stop = bundle.stop()) {
    findings.push_back(fmt::format("{} at byte {}: {} (the {} frames before it are usable)",
                                   stop->torn ? "torn" : "corrupt", stop->offset, stop->reason,
                                   bundle.frames()));
  }
  if (bundle.frames() == 0 && !bundle.stop()) findings.push_back("no frames after the file header");
  if (const bundle::Trailer* trailer = bundle.trailer()) {
    if (!trailer->complete()) {
      uint64_t dropped = 0;
      for (const auto& count : trailer->classes()) dropped += count.dropped();
      std::string finding = "the recording is incomplete: " + bundle.endReason();
      if (dropped != 0) finding += fmt::format(" ({} records dropped)", dropped);
      findings.push_back(std::move(finding));
    }
  } else {
    findings.push_back("no trailer: the recording was cut short");
  }
  for (const auto& problem : bundle.problems()) findings.push_back(problem);
  const bool tensor_bundle = bundle.kind() == proto::BundleKind::kTensor;
  std::optional<TensorFrames> tensor;
  if (tensor_bundle || bundle.tensorFrames() != 0) tensor = readTensorFrames(bundle);
  if (!tensor_bundle && bundle.tensorFrames() != 0)
    findings.push_back(fmt::format("{} tensor frame(s) in a memory bundle", bundle.tensorFrames()));
  if (tensor) findings.insert(findings.end(), tensor->problems.begin(), tensor->problems.end());

  auto it = std::back_inserter(out.buffer());
  if (findings.empty()) {
    const bundle::Trailer* trailer = bundle.trailer();
    const std::string tensor_counts =
        tensor_bundle ? fmt::format(", {} sites, {} observations", tensor->sites, tensor->observations) : "";
    fmt::format_to(it, "{}: ok: complete {} bundle, format version {}, {} frames, {} records, {} points{}, end: {}\n",
                   bundle.path(), bundle.kindName(), bundle.formatVersion(), bundle.frames(),
                   bundle.scanned().records, bundle.points().size(), tensor_counts, trailer->end_reason());
    return kExitOk;
  }
  fmt::format_to(it, "{}: not whole and complete ({} bundle, format version {}):\n", bundle.path(),
                 bundle.kindName(), bundle.formatVersion());
  for (const auto& finding : findings) fmt::format_to(it, "  {}\n", finding);
  return kExitFinding;
}

}  // namespace

void registerValidateCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"validate"},
      .summary = "Check that a bundle is whole and complete (exit 0, 1 or 2)",
      .description =
          "Reads every frame and checks the checksums, that every event batch decodes, that\n"
          "the header comes first and the trailer last, that the trailer's counts match the\n"
          "records in the file, and that the trailer says the recording is complete. In a\n"
          "tensor bundle also its tensor frames: observations of sites that are not there,\n"
          "ranges and replays outside their site's, observation columns of unequal length,\n"
          "sites of kernels no kernel frame describes, and counters that disagree with the\n"
          "frames. Prints one line when all is well, else the findings, one per line.",
      .arguments = {{"BUNDLE", kBundleArgumentHelp}},
      .options = {},
      .exit_codes =
          "  0   the bundle is whole and complete\n"
          "  1   readable, but torn, corrupt after some frames, incomplete (no trailer, the job\n"
          "      died, records dropped) or inconsistent; the findings say which\n"
          "  2   not a bundle, a newer format version, an unknown kind, an unreadable path,\n"
          "      or bad usage\n",
      .run = runValidate,
  });
}

}  // namespace tcgd::analyze
