#pragma once
#include <stdexcept>
#include <string>

namespace trn {

// A mistake in the user's input (config, CLI, trace, workload parameters): exit status 2.
class user_error : public std::runtime_error {
  public:
    explicit user_error(const std::string& what) : std::runtime_error(what) {}
};

// The program's semaphores can never all be satisfied: reported as a user error (exit 2).
class deadlock_error : public user_error {
  public:
    explicit deadlock_error(const std::string& what) : user_error(what) {}
};

}  // namespace trn
