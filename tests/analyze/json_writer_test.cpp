// The streaming JSON writer (tools/analyze/report/json_writer.h).
#include "report/json_writer.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "mini_json.h"

namespace tcgd::analyze {
namespace {

using testing::parseJson;

TEST(JsonWriter, WritesIntegersExactlyAtTheLimits) {
  std::string out;
  JsonWriter json(&out);
  json.beginArray()
      .value(std::numeric_limits<uint64_t>::max())
      .value(std::numeric_limits<int64_t>::min())
      .value((uint64_t{1} << 53) + 1)
      .value(int32_t{-7})
      .value(uint8_t{255})
      .endArray();
  EXPECT_EQ(out, "[18446744073709551615,-9223372036854775808,9007199254740993,-7,255]");
}

TEST(JsonWriter, PlacesCommasAndColonsInNestedStructures) {
  std::string out;
  JsonWriter json(&out);
  json.beginObject();
  json.key("a").beginArray().endArray();
  json.key("b").beginObject().key("c").value(true).key("d").null().endObject();
  json.key("e").beginArray().value("x").beginObject().endObject().value(false).endArray();
  json.endObject();
  EXPECT_EQ(out, R"({"a":[],"b":{"c":true,"d":null},"e":["x",{},false]})");
  EXPECT_EQ(json.depth(), 0);
  EXPECT_NO_THROW(parseJson(out));
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  std::string out;
  JsonWriter json(&out);
  const std::string nasty = std::string("q\"b\\n\nt\tc\x01 e\x1f") + '\0' + "end";
  json.value(nasty);
  EXPECT_EQ(out, "\"q\\\"b\\\\n\\nt\\tc\\u0001 e\\u001f\\u0000end\"");
  EXPECT_EQ(parseJson(out).asString(), nasty);
}

TEST(JsonWriter, KeepsValidUtf8AndReplacesInvalidBytes) {
  std::string out;
  JsonWriter json(&out);
  json.beginArray();
  json.value("gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80");  // ü ß € 😀
  json.value("bad \xFF lone \xC3 over \xC0\xAF surrogate \xED\xA0\x80 end");
  json.endArray();
  const auto parsed = parseJson(out);
  EXPECT_EQ(parsed[0].asString(), "gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string replaced = parsed[1].asString();
  EXPECT_EQ(replaced.find('\xFF'), std::string::npos);
  EXPECT_NE(replaced.find("bad \xEF\xBF\xBD lone \xEF\xBF\xBD over"), std::string::npos) << replaced;
  EXPECT_NE(replaced.find(" end"), std::string::npos);
}

TEST(JsonWriter, WritesDoublesAndNullForNonFinite) {
  std::string out;
  JsonWriter json(&out);
  json.beginArray().value(0.5).value(std::nan("")).value(-INFINITY).value(1e300).endArray();
  EXPECT_EQ(out, "[0.5,null,null,1e+300]");
  EXPECT_NO_THROW(parseJson(out));
}

TEST(JsonWriter, ResetStartsAnotherTopLevelValue) {
  std::string out;
  JsonWriter json(&out);
  json.beginObject().key("a").value(1).endObject();
  out.push_back('\n');
  json.reset();
  json.beginObject().key("b").value(2).endObject();
  EXPECT_EQ(out, "{\"a\":1}\n{\"b\":2}");
}

}  // namespace
}  // namespace tcgd::analyze
