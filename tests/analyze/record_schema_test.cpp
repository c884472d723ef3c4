// Word descriptors of record-type schemas (tools/analyze/bundle/record_schema.h).
#include "bundle/record_schema.h"

#include <gtest/gtest.h>

namespace tcgd::analyze {
namespace {

TEST(RecordSchema, PacksFieldsFromTheLowBitsUp) {
  std::vector<FieldSpec> fields;
  ASSERT_TRUE(parseDescriptor("result:i32,device:i32", 2, &fields));
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].name, "result");
  EXPECT_EQ(fields[0].shift, 0);
  EXPECT_EQ(fields[0].width, 32);
  EXPECT_EQ(fields[1].name, "device");
  EXPECT_EQ(fields[1].shift, 32);
  EXPECT_EQ(fields[1].word, 2);
  const uint64_t word = uint64_t{0xFFFFFFFF} | (uint64_t{7} << 32);  // result -1, device 7
  EXPECT_EQ(fieldSigned(fields[0], word), -1);
  EXPECT_EQ(fieldSigned(fields[1], word), 7);
  EXPECT_EQ(fieldBits(fields[0], word), 0xFFFFFFFFu);
}

TEST(RecordSchema, KnowsTheWidthOfEveryKind) {
  std::vector<FieldSpec> fields;
  ASSERT_TRUE(parseDescriptor("a:u8, b:bool,c:u16,d:i16,e:u8,f:bool", 0, &fields));
  ASSERT_EQ(fields.size(), 6u);
  EXPECT_EQ(fields[1].shift, 8);
  EXPECT_EQ(fields[1].width, 1);
  EXPECT_EQ(fields[2].shift, 9);
  EXPECT_EQ(fields[3].shift, 25);
  EXPECT_EQ(fields[4].shift, 41);
  EXPECT_EQ(fields[5].shift, 49);
  const uint64_t word = uint64_t{0x8000} << 25;  // d = -32768
  EXPECT_EQ(fieldSigned(fields[3], word), -32768);
  for (const char* kind : {"u64", "i64", "hex", "addr", "blob"}) {
    fields.clear();
    ASSERT_TRUE(parseDescriptor(std::string("x:") + kind, 0, &fields)) << kind;
    EXPECT_EQ(fields[0].width, 64) << kind;
  }
}

TEST(RecordSchema, RefusesDescriptorsThatDoNotParse) {
  std::vector<FieldSpec> fields;
  EXPECT_FALSE(parseDescriptor("x:float", 0, &fields));
  EXPECT_FALSE(parseDescriptor("x:u64,y:u8", 0, &fields));  // 72 bits
  EXPECT_FALSE(parseDescriptor("novalue", 0, &fields));
  EXPECT_FALSE(parseDescriptor(":u32", 0, &fields));
  EXPECT_FALSE(parseDescriptor("a:u8,b:bool", kFlagsWord, &fields));  // 9 bits in a byte
  EXPECT_TRUE(fields.empty());  // a refused descriptor adds nothing
  EXPECT_TRUE(parseDescriptor("a:bool,b:bool,c:u8", 0, &fields));
  EXPECT_EQ(fields.size(), 3u);
  fields.clear();
  EXPECT_TRUE(parseDescriptor("  ", 3, &fields));  // an unused word
  EXPECT_TRUE(fields.empty());
}

TEST(RecordSchema, RenamesFieldsThatCollideWithRecordKeys) {
  std::vector<FieldSpec> fields;
  ASSERT_TRUE(parseDescriptor("type:u32,api:u32", 0, &fields));
  EXPECT_EQ(fields[0].name, "arg_type");
  EXPECT_EQ(fields[1].name, "arg_api");
}

TEST(RecordSchema, TableShowsUnparsableWordsRawAndReportsThem) {
  bundle::RecordTypeSchema schema;
  schema.set_id(300);
  schema.set_name("cuMemAlloc_v2");
  schema.set_record_class("driver_memory");
  schema.add_words("ptr:hex");
  schema.add_words("size:quantum");
  SchemaTable table;
  table.add(schema);
  const RecordType* type = table.find(300);
  ASSERT_NE(type, nullptr);
  ASSERT_EQ(type->fields.size(), 2u);
  EXPECT_EQ(type->fields[1].name, "w1");
  EXPECT_EQ(type->fields[1].word, 1);
  ASSERT_EQ(table.problems().size(), 1u);
  EXPECT_NE(table.problems()[0].find("size:quantum"), std::string::npos);
  EXPECT_EQ(table.find(301), nullptr);
}

TEST(RecordSchema, ReadsTheAgentsSerializedSchemaWithoutOverridingTheHeader) {
  SchemaTable table;
  bundle::RecordTypeSchema schema;
  schema.set_id(3);
  schema.set_name("point");
  table.add(schema);
  table.addSerialized("3\t1\tshadowed\t\tname:blob\n"
                      "301\t2\tcuMemFree_v2\tcapturing:bool\tptr:hex\t\tresult:i32\n"
                      "garbage line\n");
  EXPECT_EQ(table.find(3)->name, "point");
  const RecordType* type = table.find(301);
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->name, "cuMemFree_v2");
  EXPECT_EQ(type->record_class, "driver_memory");  // class 2 by number
  ASSERT_EQ(type->fields.size(), 2u);
  EXPECT_EQ(type->fields[1].name, "result");
  EXPECT_EQ(type->fields[1].word, 2);
  ASSERT_EQ(type->flag_fields.size(), 1u);
  EXPECT_EQ(type->flag_fields[0].kind, FieldKind::kBool);
  EXPECT_EQ(table.problems().size(), 1u);
}

}  // namespace
}  // namespace tcgd::analyze
