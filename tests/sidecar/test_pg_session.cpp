// db/pg_session: the synchronous-replication WARNING is recognised in both of PostgreSQL
// 15's wordings (and nothing else is), and the history epoch moves only when a cluster's
// timeline changes (docs/failover.md).
#include <gtest/gtest.h>

#include "db/pg_session.h"

using namespace queen::sidecar;

TEST(PgSession, RecognisesTheCancelledSyncRepWait) {
    EXPECT_TRUE(pg::is_sync_rep_cancel("canceling wait for synchronous replication due to user request"));
    EXPECT_TRUE(pg::is_sync_rep_cancel(
        "canceling the wait for synchronous replication and terminating connection due to "
        "administrator command"));
    EXPECT_FALSE(pg::is_sync_rep_cancel("canceling statement due to statement timeout"));
    EXPECT_FALSE(pg::is_sync_rep_cancel("there is no transaction in progress"));
    EXPECT_FALSE(pg::is_sync_rep_cancel(nullptr));
}

TEST(PgSession, EpochMovesOnlyWhenAClustersTimelineChanges) {
    const uint64_t e0 = pg::history_epoch();
    EXPECT_EQ(pg::note_timeline("test-a", 1), e0);  // first sight: nothing learned before
    EXPECT_EQ(pg::note_timeline("test-a", 1), e0);
    EXPECT_EQ(pg::note_timeline("test-b", 7), e0);  // another cluster (a shard) is no change
    EXPECT_EQ(pg::note_timeline("test-a", 0), e0);  // unknown (a standby): ignored
    EXPECT_EQ(pg::note_timeline("test-a", 2), e0 + 1);  // a promotion
    EXPECT_EQ(pg::note_timeline("test-b", 7), e0 + 1);
    EXPECT_EQ(pg::history_epoch(), e0 + 1);
}
