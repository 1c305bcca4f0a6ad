// program_stream: a program built while it is read, counted first, in bounded memory.
#include "program/program_stream.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/error.h"

using trn::engine_kind;
using trn::program_stream;

namespace {

trn::instruction numbered(std::uint32_t n) {
    trn::instruction ins;
    ins.op = trn::opcode::memset;
    ins.imm = static_cast<float>(n);
    return ins;
}

trn::dma_transfer transfer_of(std::uint32_t n) {
    trn::dma_transfer t;
    t.src.offset = n;
    return t;
}

// A kernel of `n` steps: instruction i on the Vector engine, every third on the Scalar engine
// too, a transfer on queue 1 every fourth; none on the other engines.
void kernel(std::uint32_t n) {
    program_stream& s = *program_stream::producing();
    for (std::uint32_t i = 0; i < n; ++i) {
        s.put_instruction(engine_kind::dve, numbered(i), i % 7);
        if (i % 3 == 0) s.put_instruction(engine_kind::act, numbered(i), 0);
        if (i % 4 == 0) s.put_transfer(1, transfer_of(i), 0);
    }
}

// Reads every stream of kernel(100) to its end, as a simulation that completes does (one that
// ends early stops the producer instead).
void read_all(program_stream& s) {
    trn::stream_window<trn::instruction> w, a;
    trn::stream_window<trn::dma_transfer> q;
    for (std::size_t i = 0; i < 100; ++i) {
        if (!w.holds(i)) {
            ASSERT_TRUE(s.fetch_instruction(engine_kind::dve, i, w));
        }
    }
    for (std::size_t i = 0; i < 34; ++i) {
        if (!a.holds(i)) {
            ASSERT_TRUE(s.fetch_instruction(engine_kind::act, i, a));
        }
    }
    for (std::size_t i = 0; i < 25; ++i) {
        if (!q.holds(i)) {
            ASSERT_TRUE(s.fetch_transfer(1, i, q));
        }
    }
}

}  // namespace

TEST(ProgramStream, ReadsWhatTheBuildEmitsStreamByStreamWithItsPlaces) {
    std::size_t checked = 0;
    program_stream s(
        4, [&](engine_kind, std::size_t, const trn::instruction&) { ++checked; }, nullptr);
    s.count([] { kernel(1000); });
    EXPECT_EQ(checked, 1000u + 334u);  // every instruction checked once, by the counting build
    s.start([] { kernel(1000); });
    trn::stream_window<trn::instruction> w;
    // The engines with no instructions end at once (the counting build said so).
    EXPECT_FALSE(s.fetch_instruction(engine_kind::pe, 0, w));
    EXPECT_FALSE(s.fetch_instruction(engine_kind::pool, 0, w));
    for (std::size_t i = 0; i < 1000; ++i) {
        if (!w.holds(i)) {
            ASSERT_TRUE(s.fetch_instruction(engine_kind::dve, i, w)) << i;
        }
        EXPECT_EQ(w.at(i).imm, static_cast<float>(i));
        EXPECT_EQ(w.place(i), i % 7);
    }
    EXPECT_FALSE(s.fetch_instruction(engine_kind::dve, 1000, w));
    trn::stream_window<trn::dma_transfer> t;
    for (std::size_t k = 0; k < 250; ++k) {
        if (!t.holds(k)) {
            ASSERT_TRUE(s.fetch_transfer(1, k, t));
        }
        EXPECT_EQ(t.at(k).src.offset, 4 * k);
    }
    EXPECT_FALSE(s.fetch_transfer(1, 250, t));
    EXPECT_FALSE(s.fetch_transfer(0, 0, t));
    s.end_of_run();
    EXPECT_EQ(s.queue_count(), 2u);  // the queues it used, once the run is over
    EXPECT_EQ(s.produced(), 1000u + 334u + 250u);
}

TEST(ProgramStream, HoldsABoundedLookAheadWhateverTheKernelsLength) {
    // 300k entries read in step: what is held at once stays near the look-ahead.
    program_stream s(4, nullptr, nullptr);
    s.count([] { kernel(200000); });
    s.start([] { kernel(200000); });
    trn::stream_window<trn::instruction> dve, act;
    trn::stream_window<trn::dma_transfer> q;
    std::size_t a = 0, k = 0;
    for (std::size_t i = 0; i < 200000; ++i) {
        if (!dve.holds(i)) {
            ASSERT_TRUE(s.fetch_instruction(engine_kind::dve, i, dve));
        }
        if (i % 3 == 0) {
            if (!act.holds(a)) {
                ASSERT_TRUE(s.fetch_instruction(engine_kind::act, a, act));
            }
            ++a;
        }
        if (i % 4 == 0) {
            if (!q.holds(k)) {
                ASSERT_TRUE(s.fetch_transfer(1, k, q));
            }
            ++k;
        }
    }
    s.end_of_run();
    EXPECT_EQ(s.produced(), 200000u + 66667u + 50000u);
    // Handed over and not yet read: under look_ahead + one batch; one batch pending; a chunk of
    // at most a batch being read in each of the three streams.
    EXPECT_LE(s.most_held(), program_stream::look_ahead + 5 * program_stream::batch);
    EXPECT_GE(s.most_held(), program_stream::batch);  // (it did run ahead)
}

TEST(ProgramStream, AProducerErrorIsThrownAtTheEndOfTheRun) {
    program_stream s(4, nullptr, nullptr);
    int builds = 0;
    auto failing = [&] {
        kernel(100);
        if (++builds == 2) throw trn::user_error("out of SBUF");
    };
    s.count(failing);
    s.start(failing);
    read_all(s);
    EXPECT_THROW(s.end_of_run(), trn::user_error);
}

TEST(ProgramStream, TwoBuildsThatDifferAreCaught) {
    program_stream s(4, nullptr, nullptr);
    s.count([] { kernel(100); });
    s.start([] { kernel(101); });
    read_all(s);
    EXPECT_THROW(s.end_of_run(), std::logic_error);
}

TEST(ProgramStream, AStreamLeftUnreadStopsItsProducer) {
    // A deadlocked run reads part of the program: the producer, waiting for room, is stopped.
    program_stream s(4, nullptr, nullptr);
    s.count([] { kernel(100000); });
    s.start([] { kernel(100000); });
    trn::stream_window<trn::instruction> w;
    ASSERT_TRUE(s.fetch_instruction(engine_kind::dve, 0, w));
    EXPECT_NO_THROW(s.end_of_run());
    EXPECT_LT(s.produced(), 100000u);
}

TEST(ProgramStream, AQueueBeyondThePlatformsIsRefused) {
    program_stream s(1, nullptr, nullptr);
    EXPECT_THROW(s.count([] { kernel(10); }), trn::user_error);  // queue 1 of a platform of one
}
