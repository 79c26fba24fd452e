// safetensors files: pelab's checkpoint format and the format of the PyTorch reference fixtures.
//
// Layout (https://github.com/huggingface/safetensors): an 8-byte little-endian u64 N, then N bytes
// of JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}, then the raw little-endian tensor bytes; offsets are relative
// to the start of that data section and each tensor is contiguous row-major.
//
// Reading accepts F32 and F64 (into `floats`, converted to real) and I32 and I64 (into `ints`; I64
// values must fit in int32). Writing always produces F32 and I32, whatever `real` is.
#pragma once

#include <map>
#include <string>

#include "core/tensor.hpp"

namespace pelab {

struct SafeTensors {
  std::map<std::string, Array> floats;         // F32 on disk (F64 accepted on read)
  std::map<std::string, IndexArray> ints;      // I32 on disk (I64 accepted on read if it fits)
  std::map<std::string, std::string> metadata; // the "__metadata__" object (string values only)

  // Lookups that throw an Error naming the missing tensor (and what is there) instead of a bare
  // std::out_of_range.
  const Array& get_float(const std::string& name) const;
  const IndexArray& get_int(const std::string& name) const;
  bool has(const std::string& name) const { return floats.count(name) || ints.count(name); }
};

// Writes `st` to `path`: tensors in name order, header padded so the data starts 8-byte aligned.
// The bytes go to path + ".tmp", which is fsynced and then renamed over `path`, so a crash never
// leaves a half-written checkpoint. Throws Error (and removes the .tmp file) on any failure, on a
// name present in both maps, and on a tensor named "__metadata__".
void save_safetensors(const std::string& path, const SafeTensors& st);

// Reads a whole file. Every malformed input (missing or truncated file, bad JSON, missing fields,
// unsupported dtype, offsets out of range or not matching shape * itemsize, ...) throws an Error
// whose message starts with "safetensors: <path>:" and says what is wrong.
SafeTensors load_safetensors(const std::string& path);
// The same from bytes already in memory (e.g. read once and checksummed); `source` names them in
// error messages in place of the path.
SafeTensors parse_safetensors(const char* bytes, std::size_t size, const std::string& source);

}  // namespace pelab
