// Writes a tensor bundle with recorded values (TensorBundleBuilder::record),
// for tensorboard_readback.py to export with --histograms:
//   tcgd_tensorboard_recorded_sample BUNDLE MANIFEST
// A graph run: capture of two kernels, "scale" (float32 and float16 ranges)
// and "mixed" (bfloat16, float8_e4m3fn, float8_e5m2, int8, int32, int64,
// uint8, bool, float64 and one of unknown dtype), replayed 3 times. Replay 0
// records every range whole; replay 1 records scale's float32 range only up
// to a bytes= budget (64 of 256 bytes) and its float16 range with half its
// bytes missing; replay 2 records nothing of scale's float32 range and only
// NaNs of its float16 range. The element bits are pseudo-random (every
// float16, bfloat16 and float8 pattern can come up: NaN, Inf, subnormals),
// the float32 and float64 values spread over magnitudes 1e-15 .. 1e25.
// MANIFEST gets one JSON line per recorded observation: site, exec, range,
// dtype (a name), range_bytes, limit and the recorded bytes in hex, which
// the script decodes on its own.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor_bundle_builder.h"

namespace {

using tcgd::analyze::testing::ObservationStats;
using tcgd::analyze::testing::RangeSpec;
using tcgd::analyze::testing::TensorBundleBuilder;

struct RangeDef {
  const char* dtype_name;
  uint32_t dtype;  // tensor::Dtype
  uint32_t width;
  uint64_t bytes;
};

// float32, float16 of "scale"; the rest of "mixed" (0: unknown).
const RangeDef kScale[] = {{"float32", 1, 4, 256}, {"float16", 2, 2, 128}};
const RangeDef kMixed[] = {{"bfloat16", 3, 2, 96},  {"float8_e4m3fn", 11, 1, 200}, {"float8_e5m2", 12, 1, 200},
                           {"int8", 5, 1, 64},      {"int32", 8, 4, 64},           {"int64", 9, 8, 64},
                           {"uint8", 6, 1, 40},     {"bool", 10, 1, 40},           {"float64", 4, 8, 160},
                           {"unknown", 0, 1, 48}};

uint64_t lcg(uint64_t* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state >> 11;
}

// `bytes` bytes of elements of `def`: random bits, or spread-out values for
// float32 and float64 (with a NaN and an Inf among them).
std::string elements(const RangeDef& def, uint64_t bytes, uint64_t seed) {
  uint64_t state = seed * 7919 + 17;
  std::string out;
  const uint64_t n = bytes / def.width;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t r = lcg(&state);
    const double unit = static_cast<double>(r % 1000000) / 1000000.0 - 0.5;
    const double value = i == 5 ? NAN : i == 9 ? -INFINITY : unit * std::pow(10.0, static_cast<double>(r % 41) - 15);
    if (def.dtype == 1) {
      const auto f = static_cast<float>(value);
      out.append(reinterpret_cast<const char*>(&f), 4);
    } else if (def.dtype == 4) {
      out.append(reinterpret_cast<const char*>(&value), 8);
    } else {
      for (uint32_t b = 0; b < def.width; ++b) out.push_back(static_cast<char>((lcg(&state) >> 7) & 0xff));
    }
  }
  return out;
}

std::string hex(const std::string& data) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : data) {
    out.push_back(digits[(static_cast<uint8_t>(c) >> 4) & 0xf]);
    out.push_back(digits[static_cast<uint8_t>(c) & 0xf]);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s BUNDLE MANIFEST\n", argv[0]);
    return 2;
  }
  try {
    TensorBundleBuilder b;
    std::ofstream manifest(argv[2]);
    const uint64_t scale = b.kernel(0x5000, "_Z5scalePfP6__halff");
    const uint64_t mixed = b.kernel(0x5100, "_Z5mixedPv");
    std::vector<RangeSpec> scale_ranges, mixed_ranges;
    uint64_t ptr = 0x7f0000000000;
    for (const RangeDef& d : kScale) {
      const auto param = static_cast<int32_t>(scale_ranges.size());
      scale_ranges.push_back(TensorBundleBuilder::range(ptr, d.bytes, d.dtype, param));
      ptr += 0x10000;
    }
    for (const RangeDef& d : kMixed) {
      const auto param = static_cast<int32_t>(mixed_ranges.size());
      mixed_ranges.push_back(TensorBundleBuilder::range(ptr, d.bytes, d.dtype, param));
      ptr += 0x10000;
    }
    b.captureBegin();
    const uint64_t scale_site = b.capturedLaunch(scale, scale_ranges);
    const uint64_t mixed_site = b.capturedLaunch(mixed, mixed_ranges);
    const uint64_t exec = b.instantiate(b.captureEnd());
    const auto record = [&](uint64_t site, uint32_t replay, uint32_t range, const RangeDef& def, std::string data,
                            uint64_t limit) {
      b.record(site, replay, range, data, def.dtype, def.bytes, limit);
      manifest << "{\"site\": " << site << ", \"exec\": " << replay << ", \"range\": " << range << ", \"dtype\": \""
               << def.dtype_name << "\", \"range_bytes\": " << def.bytes << ", \"limit\": " << limit
               << ", \"hex\": \"" << hex(data) << "\"}\n";
    };
    for (int i = 0; i < 3; ++i) {
      const uint32_t replay = b.replay(exec);
      const uint64_t seed = static_cast<uint64_t>(replay) * 100;
      for (uint32_t r = 0; r < 2; ++r) {
        b.observe(scale_site, replay, r, ObservationStats::of({static_cast<float>(replay), 1.f, 2.f}));
      }
      for (uint32_t r = 0; r < std::size(kMixed); ++r) {
        const ObservationStats stats = kMixed[r].dtype == 0 ? ObservationStats::hashOnly(r)
                                                            : ObservationStats::of({static_cast<float>(r)});
        b.observe(mixed_site, replay, r, stats);
        record(mixed_site, replay, r, kMixed[r], elements(kMixed[r], kMixed[r].bytes, seed + 2 + r), kMixed[r].bytes);
      }
      const RangeDef& f32 = kScale[0];
      const RangeDef& f16 = kScale[1];
      if (replay == 0) {
        record(scale_site, replay, 0, f32, elements(f32, f32.bytes, seed), f32.bytes);
        record(scale_site, replay, 1, f16, elements(f16, f16.bytes, seed + 1), f16.bytes);
      } else if (replay == 1) {
        record(scale_site, replay, 0, f32, elements(f32, 64, seed), 64);  // bytes=64
        record(scale_site, replay, 1, f16, elements(f16, f16.bytes / 2, seed + 1), f16.bytes);  // half missing
      } else {
        std::string nans;
        for (uint64_t e = 0; e < f16.bytes / 2; ++e) nans += std::string("\x00\x7e", 2);
        record(scale_site, replay, 1, f16, nans, f16.bytes);
      }
    }
    b.write(argv[1]);
    if (!manifest.flush()) throw std::runtime_error(std::string("cannot write ") + argv[2]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
