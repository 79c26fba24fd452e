// Small filesystem helpers for results that must never be half-written. Every failure throws
// Error naming the path and the system's reason.
#pragma once

#include <string>

namespace pelab {

// Creates or truncates `path`, writes all of `content`, fsyncs and closes it.
void write_file_synced(const std::string& path, const std::string& content);

// Writes `content` to path + ".tmp" (synced), renames it over `path`, and fsyncs the directory.
// Readers see the old file or the new one, never a torn one.
void write_file_atomic(const std::string& path, const std::string& content);

// fsync a file or a directory by path.
void fsync_path(const std::string& path, bool directory = false);

std::string read_file(const std::string& path);

// Creates directory `dir` and its parents (nothing when it is already a writable directory), or throws
// Error saying what it tried, the path, the setting responsible and the system's reason:
//   "cannot create the run directory /proc/x (--out): No such file or directory".
// `what` names the directory's role ("run directory"), `source` the flag or key that chose it
// ("--out", "output.dir at exp.toml:12"). Nothing is created when it fails on the first level.
void make_directory(const std::string& dir, const std::string& what, const std::string& source);

}  // namespace pelab
