// Small filesystem helpers for results that must never be half-written. Every failure throws
// Error naming the path and the system's reason.
#pragma once

#include <string>

namespace pelab {

// Creates or truncates `path` (never through a symbolic link), writes all of `content`, fsyncs and closes it.
void write_file_synced(const std::string& path, const std::string& content);

// Writes `content` to path + ".tmp" (synced), renames it over `path`, and fsyncs the directory.
// Readers see the old file or the new one, never a torn one. Refuses (check_replaceable) a `path` or a
// path + ".tmp" that exists as anything but a plain file: a rename would replace a device node, a FIFO
// or a symbolic link (leaving its target stale) with a plain file.
void write_file_atomic(const std::string& path, const std::string& content);

// The one rule for every output pelab renames into place: `path` may be absent or a regular file (not
// a link to one). Anything else throws Error naming the path, what it is and what is allowed:
//   "out.json is a symbolic link (to results/a.json): pelab replaces only plain files; give the
//    target's path or a new file"
void check_replaceable(const std::string& path);
// The same as a message, "" when `path` may be replaced (for callers that report rather than throw).
std::string replace_refusal(const std::string& path);

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
