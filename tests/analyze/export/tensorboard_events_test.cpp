// The TensorBoard event files of `export tensorboard`: CRC-32C, TFRecord
// framing, the Event wire format (bytes written out by hand from the field
// numbers of TensorBoard's schema), the writer read back record by record,
// and the histogram's buckets.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "export/crc32c.h"
#include "export/tensorboard_events.h"

namespace tcgd::analyze {
namespace {

std::string bytes(std::initializer_list<int> list) {
  std::string out;
  for (const int b : list) out.push_back(static_cast<char>(b));
  return out;
}

std::string littleEndian(uint64_t value, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

std::string doubleBytes(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, 8);
  return littleEndian(bits, 8);
}

uint64_t readLittleEndian(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
  return v;
}

// Splits a TFRecord file into its records, checking both CRCs of each.
std::vector<std::string> readRecords(const std::string& file) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size());
    const uint64_t length = readLittleEndian(file, at, 8);
    EXPECT_EQ(readLittleEndian(file, at + 8, 4), maskCrc32c(crc32c(std::string_view(file).substr(at, 8))));
    EXPECT_LE(at + 16 + length, file.size());
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(readLittleEndian(file, at + 12 + length, 4), maskCrc32c(crc32c(data)));
    records.push_back(data);
    at += 16 + length;
  }
  return records;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TempDir {
 public:
  TempDir() {
    path_ = (std::filesystem::temp_directory_path() / ("tcgd-tb-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(counter_++))).string();
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(Crc32c, StandardCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  // 32 zero bytes: the iSCSI test vector (RFC 3720, B.4).
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62a8ab43u);
}

TEST(Crc32c, ChainsAcrossCalls) {
  EXPECT_EQ(crc32c("56789", crc32c("1234")), crc32c("123456789"));
}

TEST(Crc32c, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(maskCrc32c(0), 0xa282ead8u);
  EXPECT_EQ(maskCrc32c(0x00008000u), 0xa282ead8u + 1);        // bit 15 rotated to bit 0
  EXPECT_EQ(maskCrc32c(0x00000001u), 0xa282ead8u + 0x20000u);  // bit 0 to bit 17
}

TEST(TfRecord, LengthCrcDataCrc) {
  const std::string record = tfRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), littleEndian(3, 8));
  EXPECT_EQ(record.substr(8, 4), littleEndian(maskCrc32c(crc32c(littleEndian(3, 8))), 4));
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(record.substr(15, 4), littleEndian(maskCrc32c(crc32c("abc")), 4));
  EXPECT_EQ(readRecords(tfRecord("") + record).size(), 2u);
}

// The wire bytes, from TensorBoard's field numbers: Event wall_time 1
// (double), step 2 (varint), file_version 3, summary 5; Summary value 1;
// Value tag 1, simple_value 2 (float), histo 5; HistogramProto min 1 .. 5,
// bucket_limit 6 and bucket 7 (packed doubles).
TEST(EventEncoding, FileVersionEvent) {
  tensorboard::Event e;
  e.set_wall_time(1.5);
  e.set_file_version(kTensorboardFileVersion);
  const std::string expected = bytes({0x09}) + doubleBytes(1.5) + bytes({0x1a, 13}) + "brain.Event:2";
  EXPECT_EQ(e.SerializeAsString(), expected);
}

TEST(EventEncoding, ScalarEvent) {
  tensorboard::Event e;
  e.set_wall_time(2.0);
  e.set_step(300);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag("a/b");
  v->set_simple_value(2.0f);
  // Value: tag (0x0a 3 "a/b"), simple_value (0x15, 2.0f = 0x40000000).
  const std::string value = bytes({0x0a, 3}) + "a/b" + bytes({0x15, 0, 0, 0, 0x40});
  const std::string summary = bytes({0x0a, static_cast<int>(value.size())}) + value;
  const std::string expected = bytes({0x09}) + doubleBytes(2.0) + bytes({0x10, 0xac, 0x02}) +  // 300
                               bytes({0x2a, static_cast<int>(summary.size())}) + summary;
  EXPECT_EQ(e.SerializeAsString(), expected);
}

TEST(EventEncoding, Histogram) {
  tensorboard::HistogramProto h;
  h.set_min(-1);
  h.set_max(1);
  h.set_num(2);
  h.set_sum(0);  // proto3: a zero is not written
  h.set_sum_squares(2);
  h.add_bucket_limit(0);
  h.add_bucket_limit(DBL_MAX);
  h.add_bucket(1);
  h.add_bucket(1);
  const std::string expected = bytes({0x09}) + doubleBytes(-1) + bytes({0x11}) + doubleBytes(1) + bytes({0x19}) +
                               doubleBytes(2) + bytes({0x29}) + doubleBytes(2) + bytes({0x32, 16}) + doubleBytes(0) +
                               doubleBytes(DBL_MAX) + bytes({0x3a, 16}) + doubleBytes(1) + doubleBytes(1);
  EXPECT_EQ(h.SerializeAsString(), expected);
  tensorboard::Summary::Value v;
  *v.mutable_histo() = h;
  EXPECT_EQ(v.SerializeAsString(), bytes({0x2a, static_cast<int>(expected.size())}) + expected);
}

TEST(EventFileWriter, WritesVersionThenEventsAndRenamesAtCommit) {
  TempDir dir;
  const std::string name = eventFileName(1700000000.7, "gpu.host-1", "tcgd-42");
  EXPECT_EQ(name, "events.out.tfevents.1700000000.gpu_host-1.tcgd-42");
  std::string path;
  {
    EventFileWriter writer(dir.path() + "/sub", name, 1700000000.0);
    writer.addScalars(3, 1700000001.0, {{"k[0]/arg0/mean", 0.25}, {"k[0]/arg0/numel", 1e6}});
    const std::vector<double> values = {1, 2, 3};
    EXPECT_TRUE(writer.addHistogram(4, 1700000002.0, "k[0]/arg0/hist", values));
    EXPECT_FALSE(writer.addHistogram(5, 1700000003.0, "empty", std::vector<double>{NAN}));
    EXPECT_FALSE(std::filesystem::exists(writer.path()));  // not before commit
    path = writer.commit();
    EXPECT_EQ(writer.events(), 3u);
    EXPECT_EQ(writer.scalars(), 2u);
    EXPECT_EQ(writer.histograms(), 1u);
    EXPECT_EQ(writer.bytes(), std::filesystem::file_size(path));
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() + "/sub"), {}), 1);  // no temporary
  const std::vector<std::string> records = readRecords(readFile(path));
  ASSERT_EQ(records.size(), 3u);
  tensorboard::Event e;
  ASSERT_TRUE(e.ParseFromString(records[0]));
  EXPECT_EQ(e.file_version(), "brain.Event:2");
  EXPECT_EQ(e.wall_time(), 1700000000.0);
  ASSERT_TRUE(e.ParseFromString(records[1]));
  EXPECT_EQ(e.step(), 3);
  EXPECT_EQ(e.wall_time(), 1700000001.0);
  ASSERT_EQ(e.summary().value_size(), 2);
  EXPECT_EQ(e.summary().value(0).tag(), "k[0]/arg0/mean");
  EXPECT_EQ(e.summary().value(0).simple_value(), 0.25f);
  EXPECT_EQ(e.summary().value(1).simple_value(), 1e6f);
  ASSERT_TRUE(e.ParseFromString(records[2]));
  EXPECT_EQ(e.step(), 4);
  ASSERT_TRUE(e.summary().value(0).has_histo());
  EXPECT_EQ(e.summary().value(0).histo().num(), 3);
  EXPECT_EQ(e.summary().value(0).histo().sum_squares(), 14);
}

TEST(EventFileWriter, NoFileWithoutCommit) {
  TempDir dir;
  {
    EventFileWriter writer(dir.path(), "events.out.tfevents.0.h.x", 0);
    writer.addScalars(0, 0, {{"t", 1}});
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0);
}

TEST(Histogram, DefaultBucketLimits) {
  const std::vector<double>& limits = defaultBucketLimits();
  ASSERT_EQ(limits.size(), 1551u);  // 774 powers of 1.1 from 1e-12 below 1e20, DBL_MAX, each side; 0
  EXPECT_EQ(limits.front(), -DBL_MAX);
  EXPECT_EQ(limits.back(), DBL_MAX);
  EXPECT_EQ(limits[775], 0.0);
  EXPECT_DOUBLE_EQ(limits[776], 1e-12);
  EXPECT_DOUBLE_EQ(limits[777], 1.1e-12);
  EXPECT_LT(limits[1549], 1e20);
  for (size_t i = 0; i + 1 < limits.size(); ++i) {
    ASSERT_LT(limits[i], limits[i + 1]) << i;
    ASSERT_EQ(limits[i], -limits[limits.size() - 1 - i]) << i;
  }
}

TEST(Histogram, CountsFiniteValuesIntoTheirBuckets) {
  const std::vector<double> values = {1.0, 1.0, -2.5, 0.0, NAN, INFINITY, 1e-20, 3e30, -DBL_MAX, DBL_MAX};
  uint64_t nonfinite = 0;
  const tensorboard::HistogramProto h = histogramOf(values, &nonfinite);
  EXPECT_EQ(nonfinite, 2u);
  EXPECT_EQ(h.num(), 8);
  EXPECT_EQ(h.min(), -DBL_MAX);
  EXPECT_EQ(h.max(), DBL_MAX);
  ASSERT_EQ(h.bucket_limit_size(), h.bucket_size());
  double total = 0;
  for (const double b : h.bucket()) total += b;
  EXPECT_EQ(total, 8);
  // Every value lies in [previous limit, limit) of a non-empty bucket.
  for (const double v : values) {
    if (!std::isfinite(v)) continue;
    bool found = false;
    for (int i = 0; i < h.bucket_size() && !found; ++i) {
      const double low = i == 0 ? -DBL_MAX : h.bucket_limit(i - 1);
      const double high = h.bucket_limit(i);
      found = h.bucket(i) > 0 && low <= v && (v < high || (v == DBL_MAX && high == DBL_MAX));
    }
    EXPECT_TRUE(found) << v;
  }
  // Limits increase; no two empty buckets in a row (runs collapse).
  for (int i = 1; i < h.bucket_size(); ++i) {
    EXPECT_LT(h.bucket_limit(i - 1), h.bucket_limit(i));
    EXPECT_FALSE(h.bucket(i - 1) == 0 && h.bucket(i) == 0) << i;
  }
  EXPECT_GT(h.bucket(h.bucket_size() - 1), 0);
}

TEST(Histogram, SumsAndOneBucketForEqualValues) {
  const std::vector<double> values = {0.5, 0.5, 0.5, 0.5};
  const tensorboard::HistogramProto h = histogramOf(values);
  EXPECT_EQ(h.num(), 4);
  EXPECT_EQ(h.sum(), 2.0);
  EXPECT_EQ(h.sum_squares(), 1.0);
  ASSERT_EQ(h.bucket_size(), 2);  // the empty run below, then 0.5's bucket
  EXPECT_EQ(h.bucket(0), 0);
  EXPECT_EQ(h.bucket(1), 4);
  EXPECT_LE(h.bucket_limit(0), 0.5);
  EXPECT_GT(h.bucket_limit(1), 0.5);
  EXPECT_LT(h.bucket_limit(1), 0.5 * 1.1 + 1e-12);
}

TEST(Histogram, NoFiniteValue) {
  const tensorboard::HistogramProto h = histogramOf(std::vector<double>{});
  EXPECT_EQ(h.num(), 0);
  EXPECT_EQ(h.bucket_size(), 0);
}

}  // namespace
}  // namespace tcgd::analyze
