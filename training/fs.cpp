#include "training/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/tensor.hpp"
#include "training/signals.hpp"

namespace pelab {

namespace {
Error sys_error(const std::string& what, const std::string& path) {
  return Error(what + " " + path + ": " + std::strerror(errno));
}
}  // namespace

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw sys_error("cannot open", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw sys_error("cannot fsync", path);
}

std::string replace_refusal(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";  // absent (or unreachable: the write says why)
  if (S_ISREG(st.st_mode)) return "";
  std::string what = "a special file";
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(path, ec);
    what = "a symbolic link" + (ec ? std::string() : " (to " + target.string() + ")");
  } else if (S_ISDIR(st.st_mode)) {
    what = "a directory";
  } else if (S_ISFIFO(st.st_mode)) {
    what = "a FIFO";
  } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    what = "a device node";
  } else if (S_ISSOCK(st.st_mode)) {
    what = "a socket";
  }
  return path + " is " + what + ": pelab writes its outputs only where a plain file may be replaced; give " +
         (S_ISLNK(st.st_mode) ? "the target's path, or " : "") + "the path of a new or regular file";
}

void check_replaceable(const std::string& path) {
  const std::string why = replace_refusal(path);
  if (!why.empty()) throw Error(why);
}

void write_file_synced(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0) throw sys_error("cannot create", path);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Error e = sys_error("cannot write", path);
      ::close(fd);
      throw e;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const Error e = sys_error("cannot fsync", path);
    ::close(fd);
    throw e;
  }
  if (::close(fd) != 0) throw sys_error("cannot close", path);
}

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  check_replaceable(path);
  check_replaceable(tmp);
  begin_output_write();  // a stop deadline (training/signals.hpp) lets this write finish
  struct Done {
    ~Done() { end_output_write(); }
  } done;
  try {
    write_file_synced(tmp, content);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const Error e = sys_error("cannot rename " + tmp + " to", path);
    ::unlink(tmp.c_str());
    throw e;
  }
  const auto dir = std::filesystem::path(path).parent_path();
  fsync_path(dir.empty() ? "." : dir.string(), true);
}

void make_directory(const std::string& dir, const std::string& what, const std::string& source) {
  namespace fs = std::filesystem;
  const std::string head = "cannot create the " + what + " " + dir + " (" + source + "): ";
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::is_directory(st)) {
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw Error("cannot write into the " + what + " " + dir + " (" + source + "): " + std::strerror(errno));
    return;
  }
  if (fs::exists(st)) throw Error(head + "it exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw Error(head + ec.message());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sys_error("cannot read", path);
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) throw sys_error("error reading", path);
  return os.str();
}

}  // namespace pelab
