// `tcgd-analyze dump BUNDLE [--json] [--frames | --tensor WHAT]`: every
// record, every frame, or the rows of one kind of tensor frame.
#include <fmt/format.h>

#include <cstdio>
#include <iterator>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "model/tensor_frames.h"
#include "report/frame_format.h"
#include "report/record_format.h"

namespace tcgd::analyze {
namespace {

enum class TensorPart { kNone, kKernels, kSites, kObservations, kCounters, kPayloads };

TensorPart tensorPart(const ParsedArgs& args) {
  const auto text = args.value("--tensor");
  if (!text) return TensorPart::kNone;
  if (args.flag("--frames"))
    throw UsageError("give --frames or --tensor, not both", std::string(kProgramName) + " dump --help");
  if (*text == "kernels") return TensorPart::kKernels;
  if (*text == "sites") return TensorPart::kSites;
  if (*text == "observations") return TensorPart::kObservations;
  if (*text == "counters") return TensorPart::kCounters;
  if (*text == "payloads") return TensorPart::kPayloads;
  throw AnalyzeError(
      fmt::format("bad --tensor '{}': expected kernels, sites, observations, payloads or counters", *text));
}

// The rows of one kind of tensor frame, streamed. Returns the observation
// batches that could not be read (and were skipped).
std::vector<std::string> dumpTensor(const Bundle& bundle, TensorPart part, bool json, Output& out) {
  std::vector<std::string> problems;
  TensorFrameVisitor visit;
  std::string& buffer = out.buffer();
  switch (part) {
    case TensorPart::kKernels:
      visit.kernel = [&](const bundle::TensorKernel& k, const FrameInfo&) {
        json ? appendTensorKernelJson(k, &buffer) : appendTensorKernelText(k, &buffer);
        out.maybeFlush();
      };
      break;
    case TensorPart::kSites:
      visit.sites = [&](const bundle::TensorSiteBatch& batch, const FrameInfo&) {
        for (const auto& site : batch.sites()) json ? appendTensorSiteJson(site, &buffer) : appendTensorSiteText(site, &buffer);
        out.maybeFlush();
      };
      break;
    case TensorPart::kObservations:
      visit.observations = [&](const bundle::TensorObservationBatch& batch, const FrameInfo& info) {
        if (const std::string problem = observationColumnsProblem(batch); !problem.empty()) {
          problems.push_back(fmt::format("observation batch at byte {} skipped: {}", info.offset, problem));
          return;
        }
        const int rows = static_cast<int>(observationRows(batch));
        for (int i = 0; i < rows; ++i) {
          json ? appendObservationJson(batch, i, &buffer) : appendObservationText(batch, i, &buffer);
          out.maybeFlush();
        }
      };
      break;
    case TensorPart::kCounters:
      visit.counters = [&](const bundle::TensorCounters& c, const FrameInfo&) {
        json ? appendTensorCountersJson(c, &buffer) : appendTensorCountersText(c, &buffer);
      };
      break;
    case TensorPart::kPayloads:
      visit.payloads = [&](const bundle::TensorPayloadBatch& batch, const FrameInfo&) {
        for (const auto& p : batch.payloads()) json ? appendPayloadJson(p, &buffer) : appendPayloadText(p, &buffer);
        out.maybeFlush();
      };
      break;
    case TensorPart::kNone:
      break;
  }
  forEachTensorFrame(bundle, visit);
  return problems;
}

int runDump(const ParsedArgs& args, Output& out) {
  const TensorPart tensor = tensorPart(args);  // options are checked before the bundle is read
  const Bundle bundle = Bundle::load(args.positional(0));
  const bool json = args.flag("--json");
  std::vector<std::string> problems;
  if (tensor != TensorPart::kNone) {
    problems = dumpTensor(bundle, tensor, json, out);
  } else if (args.flag("--frames")) {
    bundle.forEachFrame([&](const FrameInfo& info) {
      if (json) {
        appendFrameJson(info, &out.buffer());
      } else {
        appendFrameText(info, &out.buffer());
      }
      out.maybeFlush();
    });
  } else {
    RecordFormatter formatter(bundle);
    problems = bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& records) {
      std::string& buffer = out.buffer();
      // The branch is outside the loop so each loop body is one straight call.
      if (json) {
        for (const auto& record : records) formatter.appendJson(record, &buffer);
      } else {
        for (const auto& record : records) formatter.appendText(record, &buffer);
      }
      out.maybeFlush();
    });
  }
  out.flush();
  // Warnings go to stderr so stdout stays pure records (JSON Lines for jq).
  for (const auto& problem : problems) {
    std::fprintf(stderr, "%s: warning: %s: %s\n", kProgramName, bundle.path().c_str(), problem.c_str());
  }
  if (const auto& stop = bundle.stop()) {
    std::fprintf(stderr, "%s: warning: %s: reading stopped at byte %llu: %s\n", kProgramName,
                 bundle.path().c_str(), static_cast<unsigned long long>(stop->offset),
                 stop->reason.c_str());
  }
  return kExitOk;
}

}  // namespace

void registerDumpCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"dump"},
      .summary = "Print every record, as text or JSON Lines",
      .description =
          "Prints every record of the bundle in file order, one per line, decoded through the\n"
          "record-type schemas in the bundle: interned strings are shown as strings, code\n"
          "addresses as the library mapped there, pointers in hex. With --json, one JSON\n"
          "object per line (JSON Lines) with exact 64-bit integers, for scripts and jq.\n"
          "With --tensor, the rows of one kind of tensor frame instead: kernels (with their\n"
          "short demangled and mangled names), sites (with their ranges), observations (one\n"
          "per line), payloads (the recorded pieces of bytes, one per line) or counters.\n"
          "A torn or corrupt file is dumped up to its last whole frame, with a warning on\n"
          "stderr saying where reading stopped.",
      .arguments = {{"BUNDLE", kBundleArgumentHelp}},
      .options = {{"--json", "", "Print JSON Lines, one object per record (keys in docs/cli.md)"},
                  {"--frames", "", "Print one line per frame (offset, size, type) instead of records"},
                  {"--tensor", "WHAT",
                   "Print the tensor frames' rows instead: kernels, sites, observations, payloads or counters"}},
      .exit_codes = {},
      .run = runDump,
  });
}

}  // namespace tcgd::analyze
