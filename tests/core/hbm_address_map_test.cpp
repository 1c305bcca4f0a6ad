// The HBM address decoder: channel rotation by block hash, or plain modulo interleaving.
#include "core/hbm_address_map.h"

#include <gtest/gtest.h>

#include <set>

#include "support/platform_config.h"

namespace {

using trn::hbm_address_map;

hbm_address_map map_with(const std::string& hash) {
    return hbm_address_map(trn::testing::default_config(
        {"core.hbm.channels=8", "core.hbm.interleave=512B", "core.hbm.channel_hash=" + hash}));
}

// Channels that rows of one granule at a stride of whole blocks fall on.
std::set<std::size_t> channels_of_rows(const hbm_address_map& m, std::uint64_t stride) {
    std::set<std::size_t> seen;
    for (std::uint64_t r = 0; r < 128; ++r)
        seen.insert(m.channel_of(r * stride));
    return seen;
}

TEST(HbmAddressMap, ModuloInterleavingPutsPowerOfTwoStridesOnOneChannel) {
    const hbm_address_map m = map_with("false");
    EXPECT_EQ(channels_of_rows(m, 16 * 1024).size(), 1u);
    // A stride that is an odd number of granules visits every channel.
    EXPECT_EQ(channels_of_rows(m, 512 * 49).size(), 8u);
    // Within a block, consecutive granules go to consecutive channels.
    for (std::uint64_t g = 0; g < 8; ++g)
        EXPECT_EQ(m.channel_of(g * 512 + 100), g);
}

TEST(HbmAddressMap, HashedInterleavingSpreadsPowerOfTwoStrides) {
    const hbm_address_map m = map_with("true");
    EXPECT_EQ(channels_of_rows(m, 16 * 1024).size(), 8u);
}

TEST(HbmAddressMap, EachChannelHoldsOneGranuleOfEveryBlockEitherWay) {
    for (const char* hash : {"true", "false"}) {
        const hbm_address_map m = map_with(hash);
        for (std::uint64_t block = 0; block < 64; ++block) {
            std::set<std::size_t> seen;
            for (std::uint64_t g = 0; g < 8; ++g) {
                const std::uint64_t addr = (block * 8 + g) * 512;
                seen.insert(m.channel_of(addr));
                EXPECT_EQ(m.local_of(addr), block * 512) << hash;
            }
            EXPECT_EQ(seen.size(), 8u) << hash << " block " << block;
        }
    }
}

}  // namespace
