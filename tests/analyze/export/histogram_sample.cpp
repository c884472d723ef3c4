// Writes an event file of histograms through EventFileWriter, for
// tensorboard_readback.py to read with TensorBoard's reader (the writer's
// buckets on chosen values; recorded_sample.cpp covers the export's own):
//   tcgd_tensorboard_histogram_sample DIR
// Tag "sample/hist", steps 0..2: 1000 values sin(0.37 i) * (step + 1), plus
// a NaN and an Inf that must be left out; tag "sample/wide" at step 0: -1e30,
// -1, 0, 0, 1e-13, 5, 1e25.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "export/tensorboard_events.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    tcgd::analyze::EventFileWriter writer(argv[1], "events.out.tfevents.1700000000.sample.tcgd", 1.7e9);
    for (int step = 0; step < 3; ++step) {
      std::vector<double> values;
      for (int i = 0; i < 1000; ++i) values.push_back(std::sin(i * 0.37) * (step + 1));
      values.push_back(NAN);
      values.push_back(INFINITY);
      writer.addHistogram(step, 1.7e9 + step, "sample/hist", values);
    }
    const std::vector<double> wide = {-1e30, -1, 0, 0, 1e-13, 5, 1e25};
    writer.addHistogram(0, 1.7e9, "sample/wide", wide);
    writer.commit();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
