#pragma once
// Helpers for error-path tests: run a callable, return the trn::user_error message it threw.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace trn::testing {

// The message of the trn::user_error `f` throws; records a failure (and returns "") if `f`
// returns normally or throws something else.
template <typename F>
std::string user_error_of(F&& f) {
    try {
        f();
    } catch (const trn::user_error& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected trn::user_error, got another exception: " << e.what();
        return {};
    }
    ADD_FAILURE() << "expected trn::user_error, nothing was thrown";
    return {};
}

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

inline bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace trn::testing
