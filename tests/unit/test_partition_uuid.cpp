// The partition id <-> UUID mapping of Queen's wire (same as SQL's queen.partition_uuid).
#include <gtest/gtest.h>

#include "core/common/partition_uuid.h"

namespace queen {
namespace {

TEST(PartitionUuid, MatchesTheSqlForm) {
    EXPECT_EQ(partition_uuid(0), "00000000-0000-8000-8000-000000000000");
    EXPECT_EQ(partition_uuid(1), "00000000-0000-8000-8000-000000000001");
    EXPECT_EQ(partition_uuid(255), "00000000-0000-8000-8000-0000000000ff");
    EXPECT_EQ(partition_uuid(0xabcdef123456LL), "00000000-0000-8000-8000-abcdef123456");
    // Outside [0, 2^48) there is no UUID form (SQL's queen.partition_uuid answers NULL).
    EXPECT_EQ(partition_uuid(int64_t(1) << 48), "");
    EXPECT_EQ(partition_uuid(-1), "");
}

TEST(PartitionUuid, RoundTripsAndRefusesOtherForms) {
    for (int64_t id : {int64_t(0), int64_t(1), int64_t(42), int64_t(1) << 40, (int64_t(1) << 48) - 1}) {
        int64_t back = -1;
        ASSERT_TRUE(partition_of_uuid(partition_uuid(id), &back)) << id;
        EXPECT_EQ(back, id);
    }
    int64_t v = -1;
    EXPECT_TRUE(partition_of_uuid("00000000-0000-8000-8000-00000000002A", &v));
    EXPECT_EQ(v, 42);
    EXPECT_FALSE(partition_of_uuid("", &v));
    EXPECT_FALSE(partition_of_uuid("42", &v));
    EXPECT_FALSE(partition_of_uuid("00000000-0000-8000-8000-00000000002", &v));
    EXPECT_FALSE(partition_of_uuid("00000000-0000-8000-8000-00000000002g", &v));
    EXPECT_FALSE(partition_of_uuid("10000000-0000-8000-8000-000000000001", &v));
    EXPECT_FALSE(partition_of_uuid("0197a3c2-0000-7000-8000-000000000001", &v));
}

}  // namespace
}  // namespace queen
