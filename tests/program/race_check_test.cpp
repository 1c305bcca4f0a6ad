// trn::find_races: accesses to shared memory that no chain of waits orders are races; every
// kind of ordering (waits on engines and queues, stream order, triggers) removes them.
#include "program/race_check.h"

#include <gtest/gtest.h>

#include "support/expect_error.h"
#include "support/operands.h"

namespace {

using namespace trn;
using trn::testing::chip_op;
using trn::testing::contains;
using trn::testing::hbm_op;
using trn::testing::trigger;
using trn::testing::user_error_of;

operand sbuf(std::uint32_t p0, std::uint32_t partitions, std::uint32_t elems,
             std::uint64_t offset) {
    return chip_op(mem_space::sbuf, dtype::float32, p0, partitions, elems, offset);
}

instruction copy_ins(const operand& dst, const operand& src, wait_list waits = {}) {
    instruction i;
    i.op = opcode::tensor_copy;
    i.dst = dst;
    i.src0 = src;
    i.waits = std::move(waits);
    return i;
}

std::vector<instruction>& stream(program& p, engine_kind e) {
    return p.engines[std::size_t(e)];
}

const sem_wait after_dve{semaphore_of_engine(engine_kind::dve), 1};

// DVE writes bytes 0..63 of partitions 0..127; ACT writes `dst` with `waits`.
program two_writers(const operand& act_dst, wait_list waits) {
    program p;
    stream(p, engine_kind::dve).push_back(copy_ins(sbuf(0, 128, 16, 0), sbuf(0, 128, 16, 4096)));
    stream(p, engine_kind::act).push_back(copy_ins(act_dst, sbuf(0, 128, 16, 8192), waits));
    return p;
}

TEST(RaceCheck, UnorderedWritesToTheSameBytesRace) {
    const auto races = find_races(two_writers(sbuf(0, 128, 16, 0), {}));
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "dve instruction 0");
    EXPECT_PRED2(contains, races[0], "act instruction 0");
    EXPECT_PRED2(contains, races[0], "sbuf partitions 0..127, bytes 0..63");
}

TEST(RaceCheck, AWaitOrdersThem) {
    EXPECT_TRUE(find_races(two_writers(sbuf(0, 128, 16, 0), {after_dve})).empty());
}

TEST(RaceCheck, DisjointBytesOrPartitionsDoNotRace) {
    EXPECT_TRUE(find_races(two_writers(sbuf(0, 128, 16, 64), {})).empty());  // next granule
    EXPECT_EQ(find_races(two_writers(sbuf(0, 128, 8, 32), {})).size(), 1u);  // bytes 32..63
    program p;  // partitions 0..63 and 64..127 of the same bytes
    stream(p, engine_kind::dve).push_back(copy_ins(sbuf(0, 64, 16, 0), sbuf(0, 64, 16, 4096)));
    stream(p, engine_kind::act).push_back(copy_ins(sbuf(64, 64, 16, 0), sbuf(64, 64, 16, 8192)));
    EXPECT_TRUE(find_races(p).empty());
}

TEST(RaceCheck, ReadsDoNotRaceWithReads) {
    program p;
    stream(p, engine_kind::dve).push_back(copy_ins(sbuf(0, 128, 16, 0), sbuf(0, 128, 16, 4096)));
    stream(p, engine_kind::act).push_back(copy_ins(sbuf(0, 128, 16, 64), sbuf(0, 128, 16, 4096)));
    EXPECT_TRUE(find_races(p).empty());
    // A write against an unordered read does.
    stream(p, engine_kind::pool).push_back(copy_ins(sbuf(0, 128, 16, 4096), sbuf(0, 128, 16, 128)));
    const auto races = find_races(p);  // one report per access: the first read it races with
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "pool instruction 0");
}

TEST(RaceCheck, OneStreamKeepsItsOrder) {
    program p;
    stream(p, engine_kind::dve).push_back(copy_ins(sbuf(0, 128, 16, 0), sbuf(0, 128, 16, 4096)));
    stream(p, engine_kind::dve).push_back(copy_ins(sbuf(0, 128, 16, 64), sbuf(0, 128, 16, 0)));
    EXPECT_TRUE(find_races(p).empty());
}

// A load into SBUF (q0, triggered by SP), then a DVE read of it.
program load_then_read(wait_list dve_waits) {
    program p;
    p.hbm_bytes = 1 << 16;
    p.queues.resize(1);
    p.queues[0].push_back({sbuf(0, 128, 16, 0), hbm_op(dtype::float32, 128, 16, 0, 64)});
    stream(p, engine_kind::sp).push_back(trigger(0));
    stream(p, engine_kind::dve)
        .push_back(copy_ins(sbuf(0, 128, 16, 4096), sbuf(0, 128, 16, 0), std::move(dve_waits)));
    return p;
}

TEST(RaceCheck, ADmaTransferIsOrderedByItsQueueSemaphore) {
    EXPECT_TRUE(find_races(load_then_read({{semaphore_of_queue(0), 1}})).empty());
    const auto races = find_races(load_then_read({}));
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "q0 transfer 0");
    // Waiting for the trigger is not waiting for the transfer.
    EXPECT_EQ(find_races(load_then_read({{semaphore_of_engine(engine_kind::sp), 1}})).size(), 1u);
}

TEST(RaceCheck, HbmStoresAndLoadsOfTheSameBytesNeedOrdering) {
    program p;
    p.hbm_bytes = 1 << 16;
    p.queues.resize(2);
    // q0 stores partition rows to HBM bytes 0..8191 (64 B rows, 64 B apart); q1 loads row 5.
    p.queues[0].push_back({hbm_op(dtype::float32, 128, 16, 0, 64), sbuf(0, 128, 16, 0)});
    p.queues[1].push_back({sbuf(0, 1, 16, 512), hbm_op(dtype::float32, 1, 16, 5 * 64, 64)});
    stream(p, engine_kind::sp).push_back(trigger(0));
    stream(p, engine_kind::act).push_back(trigger(1));
    const auto races = find_races(p);
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "hbm bytes 320..383");
    // Triggering the load after the store completed orders them.
    stream(p, engine_kind::act).back().waits = {{semaphore_of_queue(0), 1}};
    EXPECT_TRUE(find_races(p).empty());
    // A load of other rows never raced.
    stream(p, engine_kind::act).back().waits.clear();
    p.queues[1][0].src.offset = 8192;
    EXPECT_TRUE(find_races(p).empty());
}

TEST(RaceCheck, OrderingIsTransitive) {
    // DVE writes, ACT waits for DVE, POOL waits for ACT then overwrites: ordered through ACT.
    program p = two_writers(sbuf(0, 128, 16, 1024), {after_dve});
    stream(p, engine_kind::pool)
        .push_back(copy_ins(sbuf(0, 128, 16, 0), sbuf(0, 128, 16, 8192),
                            {{semaphore_of_engine(engine_kind::act), 1}}));
    EXPECT_TRUE(find_races(p).empty());
}

TEST(RaceCheck, AWaitCycleEndsTheWalk) {
    // DVE and ACT wait for each other; the unordered writes of POOL and SP are still found.
    program p;
    stream(p, engine_kind::pool).push_back(copy_ins(sbuf(0, 128, 16, 0), sbuf(0, 128, 16, 512)));
    stream(p, engine_kind::dve)
        .push_back(copy_ins(sbuf(0, 128, 16, 2048), sbuf(0, 128, 16, 64),
                            {{semaphore_of_engine(engine_kind::act), 1}}));
    stream(p, engine_kind::act)
        .push_back(copy_ins(sbuf(0, 128, 16, 128), sbuf(0, 128, 16, 192), {after_dve}));
    stream(p, engine_kind::sp).push_back(copy_ins(sbuf(0, 128, 16, 0), sbuf(0, 128, 16, 1024)));
    const auto races = find_races(p);
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "pool instruction 0");
    EXPECT_PRED2(contains, races[0], "sp instruction 0");
}

TEST(RaceCheck, CheckNoRacesThrowsTheFirst) {
    EXPECT_NO_THROW(check_no_races(two_writers(sbuf(0, 128, 16, 0), {after_dve})));
    EXPECT_PRED2(contains,
                 user_error_of([] { check_no_races(two_writers(sbuf(0, 128, 16, 0), {})); }),
                 "race: ");
}

}  // namespace

namespace {

TEST(RaceCheck, SecondOutputsAndThirdInputsAreAccessesToo) {
    // ACT's activation_reduce writes its dst1 (bytes 512..); DVE reads them unordered: a race.
    // And DVE's tensor_scalar reads a src2 that ACT writes unordered: a race.
    program p;
    instruction reduce;
    reduce.op = opcode::activation_reduce;
    reduce.alu = alu_op::add;
    reduce.dst = sbuf(0, 16, 16, 128);
    reduce.src0 = sbuf(0, 16, 16, 0);
    reduce.dst1 = sbuf(0, 16, 1, 512);
    stream(p, engine_kind::act).push_back(reduce);
    stream(p, engine_kind::dve).push_back(copy_ins(sbuf(0, 16, 1, 1024), sbuf(0, 16, 1, 512)));
    auto races = find_races(p);
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "bytes 512..");
    program q;
    stream(q, engine_kind::act).push_back(copy_ins(sbuf(0, 16, 1, 2048), sbuf(0, 16, 1, 0)));
    instruction ts;
    ts.op = opcode::tensor_scalar;
    ts.alu = alu_op::add;
    ts.alu1 = alu_op::multiply;
    ts.dst = sbuf(0, 16, 16, 4096);
    ts.src0 = sbuf(0, 16, 16, 0);
    ts.src2 = sbuf(0, 16, 1, 2048);
    stream(q, engine_kind::dve).push_back(ts);
    races = find_races(q);
    ASSERT_EQ(races.size(), 1u);
    EXPECT_PRED2(contains, races[0], "bytes 2048..");
}

}  // namespace
