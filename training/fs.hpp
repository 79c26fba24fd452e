// Small filesystem helpers for results that must never be half-written.
#pragma once

#include <string>

namespace pelab {

// Writes `content` to path + ".tmp", fsyncs it, renames it over `path`, and fsyncs the directory.
// Readers see the old file or the new one, never a torn one. Throws Error naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

// fsync a file or directory by path (best effort on directories).
void fsync_path(const std::string& path);

std::string read_file(const std::string& path);  // throws Error naming the path

}  // namespace pelab
