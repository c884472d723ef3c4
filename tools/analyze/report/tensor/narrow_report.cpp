#include "report/tensor/narrow_report.h"

#include <fmt/format.h>

#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

std::string launchText(const std::optional<NarrowLaunch>& n) {
  if (!n) return "-";
  if (n->capture == 0) return fmt::format("{} #{} (eager)", n->kernel, n->invocation);
  return fmt::format("{} #{} (capture {}, replay {})", n->kernel, n->invocation, n->capture - 1, n->replay);
}

void beginNarrow(JsonWriter& w, const char* result) {
  w.beginObject().key("schema").value("tcgd.tensor.narrow").key("version").value(1);
  w.key("result").value(result);
}

}  // namespace

std::string narrowText(const NarrowPlan& plan, uint32_t before) {
  std::string out = fmt::format(
      "first divergence: {} ({} launch pairs recorded: the diverging one and up to {} before it in its step)\n",
      causeTitle(plan.cause), plan.launches.size(), before);
  for (const NarrowPair& n : plan.launches)
    out += fmt::format("  {}  |  {}\n", launchText(n.side[0]), launchText(n.side[1]));
  out += fmt::format("reference: TCGD_TENSOR='{}'\n", plan.rules[0]);
  out += fmt::format("candidate: TCGD_TENSOR='{}'\n", plan.rules[1]);
  return out;
}

std::string narrowJson(const NarrowPlan& plan) {
  std::string out;
  JsonWriter w(&out);
  beginNarrow(w, "diverges");
  w.key("cause").value(causeKey(plan.cause));
  w.key("launches").beginArray();
  for (const NarrowPair& n : plan.launches) {
    w.beginObject().key("pair").value(n.pair);
    w.key("reference").value(launchText(n.side[0]));
    w.key("candidate").value(launchText(n.side[1])).endObject();
  }
  w.endArray();
  const char* names[2] = {"reference", "candidate"};
  for (int side = 0; side < 2; ++side) {
    w.key(names[side]).beginObject().key("rules").value(plan.rules[side]);
    w.key("command_line").array(plan.command_line[side]).endObject();
  }
  w.endObject();
  return out + "\n";
}

std::string narrowNothingText() {
  return "no divergence: nothing to narrow (tcgd-analyze tensor first-divergence says why)\n";
}

std::string narrowNothingJson() {
  std::string out;
  JsonWriter w(&out);
  beginNarrow(w, "no_divergence");
  w.endObject();
  return out + "\n";
}

}  // namespace tcgd::analyze
