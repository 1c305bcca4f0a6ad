#pragma once
#include <string>
#include <vector>

#include "program/program.h"

namespace trn {

// Races in a program: two instructions or DMA transfers that touch overlapping memory (SBUF,
// PSUM or HBM), at least one of them writing, with no chain of semaphore waits, stream order or
// DMA triggers ordering them. Contract: find_races returns at most `max_reports` races, each a
// message naming both accesses (FILE:LINE when the program came from a trace, else the stream
// and index) and the memory they share. It stops at a cycle of waits (which no schedule can run;
// the simulation reports it as a deadlock), having checked what comes before it.
std::vector<std::string> find_races(const program& p, std::size_t max_reports = 8);

// Throws user_error with the first race found, if any.
void check_no_races(const program& p);

}  // namespace trn
