// safetensors reader/writer (see safetensors.hpp for the format).
#include "core/safetensors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace pelab {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp copies raw little-endian bytes: a big-endian host needs byte swapping here"
#endif

namespace {

using json = nlohmann::json;

constexpr const char* kSupported = "F32, F64, I32, I64";
// The reference implementation refuses larger headers; so do we (it also bounds the JSON parse).
constexpr std::uint64_t kMaxHeader = 100u << 20;
// A valid header nests 3 deep (root > entry > shape); deeper input is rejected before parsing.
constexpr int kMaxDepth = 16;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("safetensors: " + path + ": " + what);
}

std::string sys_error() { return std::strerror(errno); }

std::vector<char> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, "cannot open for reading: " + sys_error());
  std::vector<char> bytes;
  char buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f);
    bytes.insert(bytes.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  const bool err = std::ferror(f);
  std::fclose(f);
  if (err) fail(path, "read error");
  return bytes;
}

// Max nesting of [ and { outside strings; stops counting once past the limit.
int json_depth(const char* s, std::size_t n) {
  int depth = 0, max_depth = 0;
  bool in_str = false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (in_str) {
      if (c == '\\') ++i;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > kMaxDepth) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

struct DtypeInfo {
  bool is_float;
  std::size_t itemsize;
};

bool dtype_info(const std::string& dtype, DtypeInfo& out) {
  if (dtype == "F32") out = {true, 4};
  else if (dtype == "F64") out = {true, 8};
  else if (dtype == "I32") out = {false, 4};
  else if (dtype == "I64") out = {false, 8};
  else return false;
  return true;
}

std::string names_of(const SafeTensors& st) {
  std::string s;
  for (auto& kv : st.floats) s += (s.empty() ? "" : ", ") + kv.first;
  for (auto& kv : st.ints) s += (s.empty() ? "" : ", ") + kv.first;
  return s.empty() ? "none" : s;
}

// Copies n elements of type From from unaligned bytes into dst, converting to To.
template <class From, class To>
void convert_copy(const char* src, std::size_t n, To* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    dst[i] = static_cast<To>(v);
  }
}

void write_all(int fd, const void* p, std::size_t n, const std::string& tmp) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error("safetensors: " + tmp + ": write failed: " + sys_error());
    }
    c += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

const Array& SafeTensors::get_float(const std::string& name) const {
  auto it = floats.find(name);
  if (it == floats.end())
    throw Error("safetensors: no float tensor '" + name + "' (tensors: " + names_of(*this) + ")");
  return it->second;
}

const IndexArray& SafeTensors::get_int(const std::string& name) const {
  auto it = ints.find(name);
  if (it == ints.end())
    throw Error("safetensors: no int tensor '" + name + "' (tensors: " + names_of(*this) + ")");
  return it->second;
}

void save_safetensors(const std::string& path, const SafeTensors& st) {
  // Lay the tensors out in name order across both maps.
  struct Item {
    const std::string* name;
    const Array* f;
    const IndexArray* i;
  };
  std::map<std::string, Item> items;
  for (auto& [name, a] : st.floats) items[name] = {&name, &a, nullptr};
  for (auto& [name, a] : st.ints)
    if (!items.emplace(name, Item{&name, nullptr, &a}).second)
      fail(path, "tensor '" + name + "' is both in floats and in ints");

  json header = json::object();
  std::uint64_t offset = 0;
  for (auto& [name, it] : items) {
    if (name == "__metadata__") fail(path, "a tensor cannot be named \"__metadata__\"");
    const auto& shape = it.f ? it.f->shape() : it.i->shape();
    const std::size_t numel = it.f ? it.f->size() : it.i->size();
    const std::uint64_t nbytes = std::uint64_t(numel) * 4;  // F32 and I32 both
    header[name] = {{"dtype", it.f ? "F32" : "I32"},
                    {"shape", std::vector<std::uint64_t>(shape.begin(), shape.end())},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  if (!st.metadata.empty()) header["__metadata__"] = st.metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // e.g. a name or metadata value that is not UTF-8
    fail(path, std::string("cannot encode the header: ") + e.what());
  }
  // Pad with spaces (allowed by the format) so the data section starts 8-byte aligned.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');

  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp, "cannot open for writing: " + sys_error());
  bool closed = false;
  try {
    unsigned char len[8];
    std::uint64_t n = text.size();
    for (int b = 0; b < 8; ++b) len[b] = static_cast<unsigned char>(n >> (8 * b));
    write_all(fd, len, 8, tmp);
    write_all(fd, text.data(), text.size(), tmp);
    std::vector<float> conv;
    for (auto& [name, it] : items) {
      if (it.i) {
        write_all(fd, it.i->data(), it.i->size() * sizeof(std::int32_t), tmp);
      } else if (std::is_same<real, float>::value) {
        write_all(fd, it.f->data(), it.f->size() * sizeof(float), tmp);
      } else {  // double build: store float32 all the same
        conv.resize(it.f->size());
        const real* src = it.f->data();
        for (std::size_t k = 0; k < conv.size(); ++k) conv[k] = static_cast<float>(src[k]);
        write_all(fd, conv.data(), conv.size() * sizeof(float), tmp);
      }
    }
    if (::fsync(fd) != 0) fail(tmp, "fsync failed: " + sys_error());
    closed = true;  // even on failure: the descriptor is released
    if (::close(fd) != 0) fail(tmp, "close failed: " + sys_error());
  } catch (...) {
    if (!closed) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = sys_error();
    ::unlink(tmp.c_str());
    fail(path, "cannot rename " + tmp + " over it: " + why);
  }
  // Make the rename itself durable (best effort: some filesystems refuse fsync on directories).
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

SafeTensors load_safetensors(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

namespace {

// The 8-byte length and the JSON header after it, checked; `n` gets the header's length in bytes.
json parse_header(const char* bytes, std::uint64_t size, const std::string& path, std::uint64_t& n) {
  if (size < 8)
    fail(path, "file is " + std::to_string(size) +
                   " bytes, shorter than the 8-byte header length (truncated or not a safetensors file)");
  n = 0;
  for (int b = 7; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(bytes[b]);
  if (n > size - 8)
    fail(path, "header length " + std::to_string(n) + " exceeds the " + std::to_string(size - 8) +
                   " bytes after the length field (truncated or not a safetensors file)");
  if (n > kMaxHeader)
    fail(path, "header length " + std::to_string(n) + " exceeds the format's limit of " +
                   std::to_string(kMaxHeader) + " bytes");
  const char* hdr = bytes + 8;
  if (json_depth(hdr, n) > kMaxDepth)
    fail(path, "header JSON is nested more than " + std::to_string(kMaxDepth) + " levels deep");

  json header;
  try {
    header = json::parse(hdr, hdr + n);
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "header JSON is not an object");
  return header;
}

void read_metadata(const json& e, const std::string& path, SafeTensors& st) {
  if (!e.is_object()) fail(path, "\"__metadata__\" is not an object");
  for (auto& [k, v] : e.items()) {
    if (!v.is_string()) fail(path, "\"__metadata__\" value of '" + k + "' is not a string");
    st.metadata[k] = v.get<std::string>();
  }
}

// One tensor's header entry, checked against the data section.
struct TensorEntry {
  std::string dtype;
  DtypeInfo info{};
  Shape shape;
  std::uint64_t numel = 1;
  std::uint64_t begin = 0;  // offset in the data section
};

// dtype and shape of an entry; numel without overflow (a shape with a 0 holds nothing, whatever the rest).
void read_dtype_and_shape(const json& e, const std::string& path, const std::string& where, TensorEntry& t) {
  const json& jd = e["dtype"];
  if (!jd.is_string()) fail(path, where + ": \"dtype\" is not a string");
  t.dtype = jd.get<std::string>();
  if (!dtype_info(t.dtype, t.info))
    fail(path, where + ": unsupported dtype " + t.dtype + " (supported: " + kSupported + ")");

  const json& js = e["shape"];
  if (!js.is_array()) fail(path, where + ": \"shape\" is not an array");
  bool overflow = false;
  for (const json& d : js) {
    if (!d.is_number_unsigned()) fail(path, where + ": \"shape\" holds " + d.dump() + ", not a non-negative integer");
    const std::uint64_t v = d.get<std::uint64_t>();
    if (v != 0 && t.numel > std::numeric_limits<std::uint64_t>::max() / v) overflow = true;
    else t.numel *= v;
    t.shape.push_back(static_cast<std::size_t>(v));
  }
  const bool empty = std::find(t.shape.begin(), t.shape.end(), std::size_t(0)) != t.shape.end();
  if (empty) t.numel = 0, overflow = false;
  if (overflow || t.numel > std::numeric_limits<std::uint64_t>::max() / t.info.itemsize)
    fail(path, where + ": shape " + js.dump() + " is too large");
}

TensorEntry read_entry(const json& e, const std::string& path, const std::string& where, std::uint64_t data_size) {
  if (!e.is_object()) fail(path, where + ": entry is not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!e.contains(field)) fail(path, where + ": missing \"" + field + "\"");
  TensorEntry t;
  read_dtype_and_shape(e, path, where, t);
  const std::uint64_t nbytes = t.numel * t.info.itemsize;

  const json& jo = e["data_offsets"];
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
    fail(path, where + ": \"data_offsets\" is " + jo.dump() + ", not [begin, end] with non-negative integers");
  const std::uint64_t begin = jo[0].get<std::uint64_t>(), end = jo[1].get<std::uint64_t>();
  if (begin > end) fail(path, where + ": data_offsets " + jo.dump() + " has begin > end");
  if (end > data_size)
    fail(path, where + ": data_offsets " + jo.dump() + " out of range: the data section is " +
                   std::to_string(data_size) + " bytes (truncated file?)");
  if (end - begin != nbytes)
    fail(path, where + ": data_offsets " + jo.dump() + " span " + std::to_string(end - begin) +
                   " bytes but " + t.dtype + " shape " + e["shape"].dump() + " needs " + std::to_string(nbytes));
  t.begin = begin;
  return t;
}

// The tensor's bytes at src into st: floats as real, integers as int32 (I64 values must fit).
void copy_tensor(const TensorEntry& t, const char* src, const std::string& name, const std::string& path,
                 const std::string& where, SafeTensors& st) {
  if (t.info.is_float) {
    Array a(t.shape);
    if (t.dtype == "F32") convert_copy<float>(src, t.numel, a.data());
    else convert_copy<double>(src, t.numel, a.data());
    st.floats.emplace(name, std::move(a));
    return;
  }
  IndexArray a(t.shape);
  if (t.dtype == "I32") {
    convert_copy<std::int32_t>(src, t.numel, a.data());
  } else {
    for (std::uint64_t k = 0; k < t.numel; ++k) {
      std::int64_t v;
      std::memcpy(&v, src + k * 8, 8);
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        fail(path, where + ": I64 value " + std::to_string(v) + " at flat index " + std::to_string(k) +
                       " does not fit in int32");
      a.data()[k] = static_cast<std::int32_t>(v);
    }
  }
  st.ints.emplace(name, std::move(a));
}

}  // namespace

SafeTensors parse_safetensors(const char* bytes, std::size_t byte_count, const std::string& path) {
  const std::uint64_t size = byte_count;
  std::uint64_t n = 0;
  json header = parse_header(bytes, size, path, n);
  const char* data = bytes + 8 + n;
  const std::uint64_t data_size = size - 8 - n;
  SafeTensors st;
  for (auto& [name, e] : header.items()) {
    if (name == "__metadata__") {
      read_metadata(e, path, st);
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    const TensorEntry t = read_entry(e, path, where, data_size);
    copy_tensor(t, data + t.begin, name, path, where, st);
  }
  return st;
}

}  // namespace pelab
