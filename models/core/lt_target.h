#pragma once
#include <tlm>

namespace trn {

// The forward interface of a loosely-timed target that its socket calls directly: the module
// implements b_transport (and transport_dbg if it holds data) and binds a plain
// tlm::tlm_target_socket to itself, which saves the per-call indirection of the convenience
// sockets on the hottest paths. Any number of initiators may bind a socket with N = 0.
// Contract: b_transport only; the non-blocking protocol is answered with an error response.
class lt_target : public tlm::tlm_fw_transport_if<> {
  public:
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase&,
                                       sc_core::sc_time&) override {
        trans.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
        return tlm::TLM_COMPLETED;
    }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
};

}  // namespace trn
