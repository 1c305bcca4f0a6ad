#pragma once
#include <iosfwd>
#include <string>

#include "program/program.h"

// The text trace format, version 3 (docs/trace-format.md); versions 1 and 2 still read. Contract:
// read_trace(write_trace(p)) == p for every program; read_trace throws user_error
// "<file>:<line>: <what>" on any malformed line and never returns a partial program.
namespace trn {

constexpr int trace_format_version = 10;

void write_trace(std::ostream& out, const program& p);
void write_trace_file(const std::string& path, const program& p);
program read_trace(std::istream& in, const std::string& name);
program read_trace_file(const std::string& path);

std::string format_operand(const operand& op);

}  // namespace trn
