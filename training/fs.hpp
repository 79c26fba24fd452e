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

}  // namespace pelab
