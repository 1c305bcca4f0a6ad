#pragma once
#include <fstream>
#include <string>

namespace trn {

// An output file (stats, timeline, trace, CSV) that is either written whole or not at all.
// Contract: the constructor creates PATH.tmp.<pid> beside PATH, so a bad path, a missing or
// read-only directory is a user_error before any work is done; commit() flushes, checks every
// write (a full disk is a user_error naming PATH) and renames the file into place; a file never
// committed (an exception, or SIGINT/SIGTERM meanwhile) is removed and PATH left as it was.
// A PATH that is not a regular file (/dev/null, /dev/stdout, a FIFO) is written in place.
class output_file {
  public:
    explicit output_file(std::string path);
    ~output_file();
    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    const std::string& path() const { return m_path; }
    std::ostream& stream() { return m_out; }
    void commit();

  private:
    std::string m_path, m_tmp;  // m_tmp empty: written in place
    std::ofstream m_out;
    bool m_done = false;
};

// output_file(path), text written, committed.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trn
