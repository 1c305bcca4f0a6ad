#include "isa/opcode_row.h"

#include <array>
#include <stdexcept>
#include <string>

namespace trn {

const opcode_info& info(opcode o) {
    return row(o).info;
}

const char* opcode_name(opcode o) {
    return static_cast<std::size_t>(o) < opcode_count ? info(o).name : "?";
}

const opcode_row& row(opcode o) {
    static const std::array<const opcode_row*, opcode_count> rows = [] {
        std::array<const opcode_row*, opcode_count> out{};
        std::size_t i = 0;
#define TRN_ROW_AT(op)                                              \
    out[i] = &row_of_##op();                                        \
    if (std::string(out[i]->info.name) != #op)                      \
        throw std::logic_error("the row of " #op " names itself " + \
                               std::string(out[i]->info.name));     \
    ++i;
        TRN_OPCODES(TRN_ROW_AT)
#undef TRN_ROW_AT
        return out;
    }();
    return *rows[static_cast<std::size_t>(o)];
}

}  // namespace trn
