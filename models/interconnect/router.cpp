#include "interconnect/router.h"

#include "core/stats.h"

#include <algorithm>

#include "core/prefetch.h"

namespace trn {

router::router(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      m_map(cfg),
      m_psum_bank_bytes(cfg.size("core.psum.bank_size")),
      m_next(m_map.channels()),
      m_bytes(m_map.channels()),
      m_bank_slot(m_map.banks(), ~std::uint32_t{0}),
      m_decoded(decoded_slots),
      m_keys(decoded_slots),
      m_used(decoded_slots, 0) {
    in.bind(*this);
    m_part.set_extension(&m_part_pages);
    m_psum_part.set_extension(&m_psum_ext);
    if (cfg.text("core.sbuf.port_sharing") == "dve+pool")
        m_shares_sbuf[std::size_t(initiator_id::dve)] =
            m_shares_sbuf[std::size_t(initiator_id::pool)] = true;
    if (cfg.text("core.psum.port_sharing") == "dve+act")
        m_shares_psum[std::size_t(initiator_id::dve)] =
            m_shares_psum[std::size_t(initiator_id::act)] = true;
}

router::~router() {
    m_part.clear_extension(&m_part_pages);  // a payload frees the extensions it still holds
    m_psum_part.clear_extension(&m_psum_ext);
}

void router::split_hbm(std::uint64_t a, std::uint64_t n, std::vector<std::uint64_t>& out) const {
    const std::uint64_t g = m_map.granule();
    for (std::uint64_t left = n; left;) {
        const std::uint64_t piece = std::min(left, g - a % g);
        out[m_map.channel_of(a)] += piece;
        a += piece;
        left -= piece;
    }
}

void router::add_block_rows(std::uint64_t addr, std::uint32_t rows, std::uint64_t n,
                            std::uint64_t stride) {
    // Every row has the same granules first..last of its block, only rotated over the channels
    // by the block's hash, and all of them in one page of each channel (page-aligned blocks of a
    // channel hold whole granules): one page per touched channel and row. A channel's bytes
    // follow from its pieces: whole granules, less what the first and last granules of a row
    // leave out (counted per row, not per piece).
    const std::uint64_t g = m_map.granule(), mask = m_map.channels() - 1;
    const int gs = m_map.granule_shift(), bs = gs + m_map.channel_shift();
    const int ps = m_map.page_shift();
    const std::uint64_t in_block = addr & ((g << m_map.channel_shift()) - 1);
    const std::uint64_t first = in_block >> gs, last = (in_block + n - 1) >> gs;
    const std::uint64_t first_short = g - std::min(n, g - (in_block & (g - 1)));
    const std::uint64_t last_short = first == last ? 0 : (last + 1) * g - (in_block + n);
    const std::size_t channels = m_map.channels();
    std::uint64_t** next = m_next.data();
    m_begin.assign(next, next + channels);
    m_first_rows.assign(channels, 0);
    m_last_rows.assign(channels, 0);
    const bool shorts = first_short || last_short;
    std::uint64_t block = addr >> bs;
    for (std::uint32_t r = 0; r < rows; ++r, block += stride >> bs) {
        const std::uint64_t hash = m_map.block_hash(block);
        const std::uint64_t page = (block << gs) >> ps;
        for (std::uint64_t k = first; k <= last; ++k)
            *next[(k + hash) & mask]++ = page;
        if (shorts) {
            ++m_first_rows[(first + hash) & mask];
            ++m_last_rows[(last + hash) & mask];
        }
    }
    for (std::size_t ch = 0; ch < channels; ++ch)
        m_bytes[ch] += static_cast<std::uint64_t>(next[ch] - m_begin[ch]) * g -
                       m_first_rows[ch] * first_short - m_last_rows[ch] * last_short;
}

void router::add_rows(std::uint64_t addr, std::uint32_t rows, std::uint64_t n,
                      std::uint64_t stride) {
    // Walks each row block by block (one hash per block of `channels` granules), granule by
    // granule within a block.
    const std::uint64_t g = m_map.granule(), c = m_map.channels(), block_bytes = g * c;
    const int gs = m_map.granule_shift(), cs = m_map.channel_shift(), ps = m_map.page_shift();
    if (gs >= 0 && cs >= 0 && ps >= gs) {
        const bool blocks_apart =
            rows == 1 || (!(stride & (block_bytes - 1)) && stride >= 2 * block_bytes);
        if (n && (addr & (block_bytes - 1)) + n <= block_bytes && blocks_apart) {
            add_block_rows(addr, rows, n, stride);
            return;
        }
    }
    // The walk, with the divisions as shifts and masks when every size is a power of two.
    auto walk = [&](auto block_of, auto granule_of, auto in_granule, auto channel_of) {
        for (std::uint32_t r = 0; r < rows; ++r, addr += stride) {
            const std::uint64_t end = addr + n;
            for (std::uint64_t a = addr; a < end;) {
                const std::uint64_t block = block_of(a);
                const std::uint64_t hash = m_map.block_hash(block);
                const std::uint64_t stop = std::min(end, (block + 1) * block_bytes);
                for (std::uint64_t gi = granule_of(a); a < stop; ++gi) {
                    const std::uint64_t next = std::min(stop, (gi + 1) * g);
                    add_range(channel_of(gi, hash), block * g + in_granule(a), next - a);
                    a = next;
                }
            }
        }
    };
    if (gs >= 0 && cs >= 0) {
        const int bs = gs + cs;
        const std::uint64_t cmask = c - 1, gmask = g - 1;
        walk([bs](std::uint64_t a) { return a >> bs; }, [gs](std::uint64_t a) { return a >> gs; },
             [gmask](std::uint64_t a) { return a & gmask; },
             [cmask](std::uint64_t gi, std::uint64_t h) {
                 return static_cast<std::size_t>((gi + h) & cmask);
             });
    } else {
        walk([block_bytes](std::uint64_t a) { return a / block_bytes; },
             [g](std::uint64_t a) { return a / g; }, [g](std::uint64_t a) { return a % g; },
             [c](std::uint64_t gi, std::uint64_t h) {
                 return static_cast<std::size_t>((gi % c + h) % c);
             });
    }
}

void router::hbm_data(tlm::tlm_generic_payload& trans) {
    auto* ext = trans.get_extension<access_ext>();
    const std::uint32_t rows = ext ? ext->rows : 1;
    const std::uint64_t row_bytes = ext ? ext->row_bytes : trans.get_data_length();
    const std::uint64_t stride = ext ? ext->row_stride : 0;
    for (std::uint32_t r = 0; r < rows; ++r) {
        std::uint64_t a = m_hbm_base + trans.get_address() + r * stride;
        std::uint8_t* data = trans.get_data_ptr() + r * row_bytes;
        for (std::uint64_t left = row_bytes; left;) {
            const std::uint64_t piece = std::min(left, m_map.granule() - a % m_map.granule());
            tlm::tlm_generic_payload part;
            part.set_command(trans.get_command());
            part.set_address(hbm_local(a));
            part.set_data_ptr(data);
            part.set_data_length(static_cast<unsigned>(piece));
            hbm[static_cast<int>(hbm_channel_of(a))]->transport_dbg(part);
            a += piece;
            data += piece;
            left -= piece;
        }
    }
}

void router::decode(std::uint64_t addr, std::uint32_t rows, std::uint64_t row_bytes,
                    std::uint64_t stride, decoded& into) {
    // Per row and channel, the row's bytes there are contiguous in local space: at most
    // span / page + 2 pages, the span being at most one granule per block the row touches.
    const std::uint64_t g = m_map.granule(), c = m_map.channels();
    const std::size_t room =
        std::size_t{rows} * (((row_bytes / (g * c) + 2) * g) / m_map.page_size() + 2) + 1;
    if (m_page_buf.size() < room * c) m_page_buf.resize(room * c);
    for (std::size_t ch = 0; ch < c; ++ch) {
        std::uint64_t* sentinel = &m_page_buf[ch * room];
        *sentinel = ~std::uint64_t{0};  // no page number: page numbers are local / page size
        m_next[ch] = sentinel + 1;
        m_bytes[ch] = 0;
    }
    add_rows(addr, rows, row_bytes, stride);
    const std::size_t nb = m_map.banks();
    into.banks.clear();
    into.begin.clear();
    into.dense.clear();
    into.changes.clear();
    if (table_form(nb, c)) {
        into.dense.assign(2 * nb * c, hbm_no_page);
        for (std::size_t ch = 0; ch < c; ++ch)
            into.changes.push_back(
                tabulate(&m_page_buf[ch * room] + 1, m_next[ch], &into.dense[2 * nb * ch]));
    } else {
        into.begin.push_back(0);
        std::size_t entries = 0;  // at most one per page and one per bank, on each channel
        for (std::size_t ch = 0; ch < c; ++ch)
            entries +=
                std::min(static_cast<std::size_t>(m_next[ch] - (&m_page_buf[ch * room] + 1)), nb);
        into.banks.reserve(entries);
        for (std::size_t ch = 0; ch < c; ++ch) {
            into.changes.push_back(summarise(&m_page_buf[ch * room] + 1, m_next[ch], into.banks));
            into.begin.push_back(static_cast<std::uint32_t>(into.banks.size()));
        }
    }
    into.bytes = m_bytes;
}

std::uint64_t router::tabulate(const std::uint64_t* page, const std::uint64_t* end,
                               std::uint32_t* table) const {
    const hbm_address_map map = m_map;  // a local copy: the stores below cannot change it
    const std::size_t nb = map.banks();
    std::uint64_t changes = 0;
    for (; page != end; ++page) {
        const std::size_t b = map.bank_of(*page);
        const auto p = static_cast<std::uint32_t>(*page);  // (it fits: hbm_address_map)
        if (table[b] == hbm_no_page)
            table[b] = p;
        else
            changes += table[nb + b] != p;
        table[nb + b] = p;
    }
    return changes;
}

std::uint64_t router::summarise(const std::uint64_t* page, const std::uint64_t* end,
                                std::vector<hbm_bank_pages>& out) {
    constexpr std::uint32_t none = ~std::uint32_t{0};
    const std::size_t base = out.size();
    const hbm_address_map map = m_map;  // a local copy: the stores below cannot change it
    std::uint32_t* slots = m_bank_slot.data();
    std::uint64_t changes = 0;
    for (; page != end; ++page) {
        std::uint32_t& slot = slots[map.bank_of(*page)];
        if (slot == none) {
            slot = static_cast<std::uint32_t>(out.size() - base);
            const auto p = static_cast<std::uint32_t>(*page);  // (it fits: hbm_address_map)
            out.push_back({p, p});
        } else {
            hbm_bank_pages& b = out[base + slot];
            changes += b.last != *page;
            b.last = static_cast<std::uint32_t>(*page);
        }
    }
    for (std::size_t i = base; i < out.size(); ++i)
        slots[map.bank_of(out[i].first)] = none;
    return changes;
}

std::size_t router::decoded_set(std::uint64_t addr, std::uint32_t rows, std::uint64_t row_bytes,
                                std::uint64_t stride) {
    std::uint64_t key = addr * 0x9e3779b97f4a7c15ull;
    key ^= (row_bytes + (std::uint64_t{rows} << 32)) * 0xc2b2ae3d27d4eb4full;
    key ^= stride * 0x165667b19e3779f9ull;
    return static_cast<std::size_t>((key >> 40) & (decoded_slots / decoded_ways - 1));
}

const router::decoded& router::decoded_of(std::uint64_t addr, std::uint32_t rows,
                                          std::uint64_t row_bytes, std::uint64_t stride) {
    const std::size_t first = decoded_set(addr, rows, row_bytes, stride) * decoded_ways;
    const decoded_key key{addr, row_bytes, stride, rows};
    // (the set's decodings are fetched while its keys are compared: whichever matches is then
    // in the cache, a memory latency sooner than fetched after the comparison)
    prefetch(&m_decoded[first], decoded_ways * sizeof(decoded));
    std::size_t victim = first;
    ++m_lookups;
    for (std::size_t e = first; e != first + decoded_ways; ++e) {
        if (m_keys[e] == key) {
            m_used[e] = m_lookups;
            return m_decoded[e];
        }
        if (m_used[e] < m_used[victim]) victim = e;
    }
    ++m_decodings;
    decode(addr, rows, row_bytes, stride, m_uncached);
    if (m_uncached.banks.size() > decoded_max_banks) return m_uncached;  // not kept
    m_keys[victim] = key;
    m_used[victim] = m_lookups;
    // (the evicted entry's buffers serve the next decoding)
    std::swap(m_decoded[victim], m_uncached);
    return m_decoded[victim];
}

void router::hbm_access(tlm::tlm_generic_payload& trans, const access_ext* ext,
                        sc_core::sc_time& delay) {
    if (trans.get_data_ptr()) hbm_data(trans);
    const std::uint32_t rows = ext ? ext->rows : 1;
    const std::uint64_t row_bytes = ext ? ext->row_bytes : trans.get_data_length();
    const std::uint64_t stride = ext && rows > 1 ? ext->row_stride : 0;  // one row: any stride
    sc_core::sc_time done = delay;
    if (rows && row_bytes) {
        (trans.is_write() ? m_hbm_write : m_hbm_read) += std::uint64_t{rows} * row_bytes;
        const decoded& dec = decoded_of(m_hbm_base + trans.get_address(), rows, row_bytes, stride);
        const std::size_t table = 2 * m_map.banks();
        // A remembered entry is rarely still in the cache: its page tables are fetched for
        // every channel at once, rather than one channel's after another's (a hint only).
        prefetch(dec.changes.data(), dec.changes.size() * sizeof(dec.changes[0]));
        prefetch(dec.bytes.data(), dec.bytes.size() * sizeof(dec.bytes[0]));
        prefetch(dec.dense.data(), dec.dense.size() * sizeof(dec.dense[0]));
        const bool direct = m_channels.size() == m_map.channels(), write = trans.is_write();
        for (std::size_t ch = 0; ch < m_map.channels(); ++ch) {
            if (dec.bytes[ch] == 0) continue;
            if (dec.dense.empty()) {
                m_part_pages.banks = dec.banks.data() + dec.begin[ch];
                m_part_pages.count = dec.begin[ch + 1] - dec.begin[ch];
                m_part_pages.dense = nullptr;
            } else {
                m_part_pages.dense = dec.dense.data() + table * ch;
                m_part_pages.count = m_map.banks();
            }
            m_part_pages.changes = dec.changes[ch];
            sc_core::sc_time d = delay;
            if (direct) {
                m_channels[ch]->time_pages(write, dec.bytes[ch], m_part_pages, d);
            } else {
                m_part.set_command(trans.get_command());
                m_part.set_address(0);
                m_part.set_data_ptr(nullptr);
                m_part.set_data_length(static_cast<unsigned>(dec.bytes[ch]));
                hbm[static_cast<int>(ch)]->b_transport(m_part, d);
            }
            if (d > done) done = d;
        }
    }
    delay = done;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void router::arbitrate(bool psum_side, initiator_id who, const sc_core::sc_time& occupancy,
                       sc_core::sc_time& delay) {
    const auto& shares = psum_side ? m_shares_psum : m_shares_sbuf;
    if (!shares[std::size_t(who)] || occupancy == sc_core::SC_ZERO_TIME) return;
    const sc_core::sc_time now = sim_time();
    const sc_core::sc_time start =
        (psum_side ? m_psum_port : m_sbuf_port).reserve(now + delay, occupancy);
    delay = start - now;
}

void router::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const std::uint64_t addr = trans.get_address();
    auto* ext = trans.get_extension<access_ext>();
    const initiator_id who = ext ? ext->initiator : initiator_id::dma;
    const sc_core::sc_time occupancy = ext ? ext->occupancy : sc_core::SC_ZERO_TIME;
    if (addr < address_map::sbuf_base) {
        hbm_access(trans, ext, delay);
    } else if (addr < address_map::psum_base) {
        arbitrate(false, who, occupancy, delay);
        sbuf->b_transport(trans, delay);
    } else if (addr < address_map::doorbell_base) {
        arbitrate(true, who, occupancy, delay);
        psum_access(trans, ext, &delay);
    } else {
        doorbell[static_cast<int>(addr - address_map::doorbell_base)]->b_transport(trans, delay);
    }
}

unsigned router::transport_dbg(tlm::tlm_generic_payload& trans) {
    const std::uint64_t addr = trans.get_address();
    if (addr < address_map::sbuf_base) {
        hbm_data(trans);
        return trans.get_data_length();
    }
    if (addr < address_map::psum_base) return sbuf->transport_dbg(trans);
    if (addr >= address_map::doorbell_base) return 0;  // a doorbell holds no data
    return psum_access(trans, trans.get_extension<access_ext>(), nullptr);
}

unsigned router::psum_access(tlm::tlm_generic_payload& trans, const access_ext* ext,
                             sc_core::sc_time* delay) {
    const std::uint64_t addr = trans.get_address();
    const std::uint64_t off = (addr - address_map::psum_base) % address_map::partition_stride;
    const std::uint64_t row_bytes = ext ? ext->row_bytes : trans.get_data_length();
    const std::uint64_t first = off / m_psum_bank_bytes,
                        last = row_bytes ? (off + row_bytes - 1) / m_psum_bank_bytes : first;
    if (first == last) {
        const int bank = static_cast<int>(first);
        if (!delay) return psum[bank]->transport_dbg(trans);
        psum[bank]->b_transport(trans, *delay);
        return trans.get_data_length();
    }
    const std::uint32_t rows = ext ? ext->rows : 1;
    std::uint8_t* data = trans.get_data_ptr();
    // One start for every bank: the latest at which one of them is free (each probed first)
    sc_core::sc_time start = delay ? *delay : sc_core::SC_ZERO_TIME;
    if (delay && last < psum.size()) {
        if (ext) m_psum_ext = *ext;
        m_psum_ext.probe = true;
        m_psum_part.set_command(trans.get_command());
        m_psum_part.set_data_ptr(nullptr);
        for (std::uint64_t b = first; b <= last; ++b) {
            m_psum_part.set_address(addr + std::max(off, b * m_psum_bank_bytes) - off);
            sc_core::sc_time d = *delay;
            psum[static_cast<int>(b)]->b_transport(m_psum_part, d);
            if (d > start) start = d;
        }
        m_psum_ext.probe = false;
    }
    sc_core::sc_time done = start;
    unsigned moved = 0;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    for (std::uint64_t b = first; b <= last; ++b) {
        const std::uint64_t lo = std::max(off, b * m_psum_bank_bytes),
                            hi = std::min(off + row_bytes, (b + 1) * m_psum_bank_bytes);
        const std::uint64_t piece = hi - lo, at = lo - off;
        if (ext) m_psum_ext = *ext;
        m_psum_ext.probe = false;
        m_psum_ext.rows = rows;
        m_psum_ext.row_bytes = piece;
        m_psum_ext.row_stride = ext ? ext->row_stride : address_map::partition_stride;
        m_psum_part.set_command(trans.get_command());
        m_psum_part.set_address(addr + at);
        m_psum_part.set_data_length(static_cast<unsigned>(rows * piece));
        m_psum_part.set_data_ptr(nullptr);
        if (data) {
            m_psum_data.resize(rows * piece);
            if (trans.is_write())
                for (std::uint32_t r = 0; r < rows; ++r)
                    std::copy_n(data + r * row_bytes + at, piece, &m_psum_data[r * piece]);
            m_psum_part.set_data_ptr(m_psum_data.data());
        }
        if (b >= psum.size()) {
            trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            break;
        }
        if (delay) {
            sc_core::sc_time d = start;
            psum[static_cast<int>(b)]->b_transport(m_psum_part, d);
            if (d > done) done = d;
        } else {
            psum[static_cast<int>(b)]->transport_dbg(m_psum_part);
        }
        if (!m_psum_part.is_response_ok())
            trans.set_response_status(m_psum_part.get_response_status());
        moved += m_psum_part.get_data_length();
        if (data && trans.is_read())
            for (std::uint32_t r = 0; r < rows; ++r)
                std::copy_n(&m_psum_data[r * piece], piece, data + r * row_bytes + at);
    }
    if (delay) *delay = done;
    return trans.is_response_ok() ? moved : 0;
}

void router::report(stats_tree& s) const {
    s.add("sbuf.port_wait_ns", m_sbuf_port.wait_total().to_seconds() * 1e9, "ns",
          "time engines queued on the shared SBUF port");
    s.add("psum.port_wait_ns", m_psum_port.wait_total().to_seconds() * 1e9, "ns",
          "time engines queued on the shared PSUM port");
}

}  // namespace trn
