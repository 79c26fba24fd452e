// safetensors reader/writer: exact round trips, files built byte by byte from the spec, every kind of
// malformed input giving a clear Error, mutated files never crashing, and the PyTorch fixtures.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/safetensors.hpp"
#include "test_paths.hpp"

using namespace pelab;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed afterwards.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("pelab_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  // Unlink first: truncating an existing file makes ext4 flush it on close (auto_da_alloc), slow.
  std::error_code ec;
  fs::remove(path, ec);
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string le_u64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int b = 0; b < 8; ++b) s[b] = static_cast<char>((n >> (8 * b)) & 0xff);
  return s;
}

template <class T>
std::string raw(std::initializer_list<T> vals) {
  std::string s;
  for (T v : vals) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

// length + header + data, exactly as the spec lays a file out.
std::string make_file(const std::string& header, const std::string& data) {
  return le_u64(header.size()) + header + data;
}

bool same_bits(const Array& a, const Array& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(real)) == 0;
}

// A valid one-tensor header around a given entry body, for the corruption cases.
std::string one(const std::string& entry) { return "{\"x\":" + entry + "}"; }

}  // namespace

TEST_CASE("safetensors: round trip of floats ints and metadata is exact", "[safetensors]") {
  TempDir tmp;
  SafeTensors st;
  Array w(Shape{2, 3});
  const float specials[6] = {1.5f, -0.0f, std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::infinity(), -3.25e-7f, 1e30f};
  std::copy(specials, specials + 6, w.data());
  st.floats["blocks.0.attn.qkv.weight"] = w;
  Array nan(Shape{1});
  nan(0) = std::numeric_limits<real>::quiet_NaN();
  st.floats["nan"] = nan;
  Array big(Shape{4, 5, 6});
  for (std::size_t i = 0; i < big.size(); ++i) big.data()[i] = real(std::sin(double(i)) * 100);
  st.floats["big"] = big;
  IndexArray ids(IndexArray::shape_type{2, 2});
  ids(0, 0) = 0, ids(0, 1) = -1, ids(1, 0) = std::numeric_limits<std::int32_t>::max(),
  ids(1, 1) = std::numeric_limits<std::int32_t>::min();
  st.ints["input.tokens"] = ids;
  st.metadata["encoding"] = "rope";
  st.metadata["params"] = "{\"base\": 10000, \"note\": \"quotes \\\" and \\u00e9 survive\"}";
  st.metadata["empty"] = "";

  const std::string p = tmp / "rt.safetensors";
  save_safetensors(p, st);
  SafeTensors back = load_safetensors(p);

  REQUIRE(back.floats.size() == 3);
  REQUIRE(back.ints.size() == 1);
  CHECK(same_bits(back.get_float("blocks.0.attn.qkv.weight"), w));
  CHECK(same_bits(back.get_float("big"), big));
  REQUIRE(back.get_float("nan").shape() == Shape{1});
  CHECK(std::isnan(back.get_float("nan")(0)));
  CHECK(back.get_int("input.tokens") == ids);
  CHECK(back.get_int("input.tokens").shape() == Shape{2, 2});
  CHECK(back.metadata == st.metadata);
  CHECK(back.has("big"));
  CHECK_FALSE(back.has("nope"));
  CHECK_THROWS_WITH(back.get_float("nope"), Contains("nope") && Contains("big"));
  CHECK_THROWS_WITH(back.get_int("big"), Contains("no int tensor 'big'"));

  // Saving again over an existing file replaces it.
  SafeTensors small;
  small.floats["only"] = Array(Shape{1}, real(2));
  save_safetensors(p, small);
  SafeTensors back2 = load_safetensors(p);
  CHECK(back2.floats.size() == 1);
  CHECK(back2.ints.empty());
  CHECK(back2.metadata.empty());
}

TEST_CASE("safetensors: 0-d and empty-dim tensors", "[safetensors]") {
  TempDir tmp;
  SafeTensors st;
  Array scalar(Shape{});
  scalar() = real(-7.5);
  st.floats["scalar"] = scalar;
  st.floats["empty_rows"] = Array(Shape{0, 3});
  st.floats["empty_cols"] = Array(Shape{2, 0});
  st.floats["empty_1d"] = Array(Shape{0});
  IndexArray iscalar(IndexArray::shape_type{});
  iscalar() = 42;
  st.ints["iscalar"] = iscalar;
  st.ints["iempty"] = IndexArray(IndexArray::shape_type{3, 0});
  const std::string p = tmp / "edge.safetensors";
  save_safetensors(p, st);

  // The header says what the spec expects for these.
  const std::string bytes = read_bytes(p);
  std::uint64_t n = 0;
  for (int b = 7; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(bytes[b]);
  auto h = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(h["scalar"]["shape"] == nlohmann::json::array());
  CHECK(h["empty_rows"]["shape"] == nlohmann::json::array({0, 3}));
  auto off = h["empty_rows"]["data_offsets"];
  CHECK(off[0] == off[1]);

  SafeTensors back = load_safetensors(p);
  REQUIRE(back.get_float("scalar").dimension() == 0);
  CHECK(back.get_float("scalar")() == real(-7.5));
  CHECK(back.get_float("empty_rows").shape() == Shape{0, 3});
  CHECK(back.get_float("empty_cols").shape() == Shape{2, 0});
  CHECK(back.get_float("empty_1d").shape() == Shape{0});
  REQUIRE(back.get_int("iscalar").dimension() == 0);
  CHECK(back.get_int("iscalar")() == 42);
  CHECK(back.get_int("iempty").shape() == IndexArray::shape_type{3, 0});

  SafeTensors none;  // no tensors at all is a valid file too
  save_safetensors(p, none);
  SafeTensors back_none = load_safetensors(p);
  CHECK(back_none.floats.empty());
  CHECK(back_none.ints.empty());
}

TEST_CASE("safetensors: reads a file built byte by byte from the spec", "[safetensors]") {
  TempDir tmp;
  // Unsorted keys, an extra unknown field, a metadata object placed first, F64 and I64 inputs,
  // trailing header whitespace, and data laid out in a different order than the keys.
  const std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[16,32],\"extra\":1},"
      "\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
      "\"i\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[32,44]},"
      "\"l\":{\"dtype\":\"I64\",\"shape\":[1,2],\"data_offsets\":[44,60]}}   ";
  const std::string data = raw<double>({0.1, -2.0}) + raw<float>({1.f, 2.f, 3.5f, -4.f}) +
                           raw<std::int32_t>({7, -3, 19}) + raw<std::int64_t>({-5, 2147483647});
  REQUIRE(data.size() == 60);
  const std::string p = tmp / "hand.safetensors";
  write_bytes(p, make_file(header, data));

  SafeTensors st = load_safetensors(p);
  REQUIRE(st.floats.size() == 2);
  REQUIRE(st.ints.size() == 2);
  const Array& w = st.get_float("w");
  REQUIRE(w.shape() == Shape{2, 2});
  CHECK(w(0, 0) == 1.f);
  CHECK(w(0, 1) == 2.f);
  CHECK(w(1, 0) == 3.5f);
  CHECK(w(1, 1) == -4.f);
  const Array& d = st.get_float("d");
  REQUIRE(d.shape() == Shape{2});
  CHECK(d(0) == real(0.1));  // F64 converted to real
  CHECK(d(1) == -2.f);
  const IndexArray& i = st.get_int("i");
  REQUIRE(i.size() == 3);
  CHECK(i(0) == 7);
  CHECK(i(1) == -3);
  CHECK(i(2) == 19);
  const IndexArray& l = st.get_int("l");
  REQUIRE(l.shape() == IndexArray::shape_type{1, 2});
  CHECK(l(0, 0) == -5);
  CHECK(l(0, 1) == 2147483647);
  CHECK(st.metadata.at("format") == "pt");
}

TEST_CASE("safetensors: written bytes follow the spec", "[safetensors]") {
  TempDir tmp;
  SafeTensors st;
  st.floats["b"] = Array(Shape{3}, real(0.5));
  st.floats["a"] = Array(Shape{2, 1}, real(-1));
  st.ints["c"] = IndexArray(IndexArray::shape_type{2}, 9);
  st.metadata["k"] = "v";
  const std::string p = tmp / "w.safetensors";
  save_safetensors(p, st);
  const std::string bytes = read_bytes(p);
  REQUIRE(bytes.size() >= 8);
  std::uint64_t n = 0;
  for (int b = 7; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(bytes[b]);
  CHECK((8 + n) % 8 == 0);  // data section 8-byte aligned
  REQUIRE(8 + n + 4 * (3 + 2 + 2) == bytes.size());
  CHECK(bytes[8] == '{');
  auto h = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(h["__metadata__"] == nlohmann::json({{"k", "v"}}));
  CHECK(h["a"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[2,1],"data_offsets":[0,8]})"));
  CHECK(h["b"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[3],"data_offsets":[8,20]})"));
  CHECK(h["c"] == nlohmann::json::parse(R"({"dtype":"I32","shape":[2],"data_offsets":[20,28]})"));
  const std::string data = bytes.substr(8 + n);
  CHECK(data == raw<float>({-1.f, -1.f, 0.5f, 0.5f, 0.5f}) + raw<std::int32_t>({9, 9}));
}

TEST_CASE("safetensors: save leaves no tmp file and fails cleanly", "[safetensors]") {
  TempDir tmp;
  SafeTensors st;
  st.floats["x"] = Array(Shape{2}, real(1));
  const std::string p = tmp / "ckpt.safetensors";
  save_safetensors(p, st);
  CHECK(fs::exists(p));
  CHECK_FALSE(fs::exists(p + ".tmp"));
  std::size_t files = 0;
  for (auto& e : fs::directory_iterator(tmp.dir)) (void)e, ++files;
  CHECK(files == 1);

  const std::string missing_dir = tmp / "no/such/dir/ckpt.safetensors";
  CHECK_THROWS_WITH(save_safetensors(missing_dir, st), Contains("no/such/dir") && Contains("cannot open"));

  SafeTensors dup = st;
  dup.ints["x"] = IndexArray(IndexArray::shape_type{1}, 1);
  CHECK_THROWS_WITH(save_safetensors(tmp / "dup.safetensors", dup), Contains("'x' is both"));
  SafeTensors reserved;
  reserved.floats["__metadata__"] = Array(Shape{1}, real(0));
  CHECK_THROWS_WITH(save_safetensors(tmp / "res.safetensors", reserved), Contains("__metadata__"));
  SafeTensors bad_utf8;
  bad_utf8.metadata["k"] = std::string("\xff\xfe", 2);
  CHECK_THROWS_WITH(save_safetensors(tmp / "utf.safetensors", bad_utf8), Contains("cannot encode"));
  // Failed saves leave nothing behind (the good file stays untouched).
  files = 0;
  for (auto& e : fs::directory_iterator(tmp.dir)) (void)e, ++files;
  CHECK(files == 1);
  CHECK(load_safetensors(p).get_float("x").size() == 2);
}

TEST_CASE("safetensors: malformed files give an Error naming the file and the problem", "[safetensors]") {
  TempDir tmp;
  const std::string p = tmp / "bad.safetensors";
  auto expect = [&](const std::string& bytes, const std::string& what) {
    write_bytes(p, bytes);
    INFO("expecting: " << what);
    CHECK_THROWS_AS(load_safetensors(p), Error);
    CHECK_THROWS_WITH(load_safetensors(p), Contains(p) && Contains(what));
  };
  const std::string f32x2 = raw<float>({1.f, 2.f});

  CHECK_THROWS_WITH(load_safetensors(tmp / "missing.safetensors"),
                    Contains("missing.safetensors") && Contains("cannot open"));
  CHECK_THROWS_WITH(load_safetensors(tmp.dir.string()), Contains("is a directory"));
  expect("", "shorter than the 8-byte header");
  expect("abc", "file is 3 bytes");
  expect(le_u64(100) + "{}", "header length 100 exceeds the 2 bytes");
  expect(le_u64(~std::uint64_t(0)) + "{}", "exceeds");
  expect(make_file("{\"x\": ", ""), "not valid JSON");
  expect(make_file("", ""), "not valid JSON");
  expect(make_file("{} trailing", ""), "not valid JSON");
  expect(make_file("[1, 2]", ""), "not an object");
  expect(make_file(std::string(100, '[') + std::string(100, ']'), ""), "nested more than");
  expect(make_file(one("[1]"), f32x2), "tensor 'x': entry is not an object");
  expect(make_file(one(R"({"shape":[2],"data_offsets":[0,8]})"), f32x2), "tensor 'x': missing \"dtype\"");
  expect(make_file(one(R"({"dtype":"F32","data_offsets":[0,8]})"), f32x2), "missing \"shape\"");
  expect(make_file(one(R"({"dtype":"F32","shape":[2]})"), f32x2), "missing \"data_offsets\"");
  expect(make_file(one(R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})"), f32x2), "\"dtype\" is not a string");
  expect(make_file(one(R"({"dtype":"F16","shape":[4],"data_offsets":[0,8]})"), f32x2),
         "unsupported dtype F16 (supported: F32, F64, I32, I64)");
  expect(make_file(one(R"({"dtype":"BF16","shape":[4],"data_offsets":[0,8]})"), f32x2), "unsupported dtype BF16");
  expect(make_file(one(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"), f32x2), "\"shape\" is not an array");
  expect(make_file(one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f32x2), "not a non-negative integer");
  expect(make_file(one(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"), f32x2), "not a non-negative integer");
  expect(make_file(one(R"({"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]})"), f32x2),
         "is too large");
  expect(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), f32x2), "not [begin, end]");
  expect(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"), f32x2), "not [begin, end]");
  expect(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":"0,8"})"), f32x2), "not [begin, end]");
  expect(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), f32x2), "begin > end");
  expect(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})"), f32x2),
         "out of range: the data section is 8 bytes");
  expect(make_file(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,12]})"), f32x2), "out of range");
  expect(make_file(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), f32x2),
         "span 8 bytes but F32 shape [3] needs 12");
  expect(make_file(one(R"({"dtype":"F64","shape":[2],"data_offsets":[0,8]})"), f32x2), "needs 16");
  expect(make_file(one(R"({"dtype":"I64","shape":[1],"data_offsets":[0,8]})"), raw<std::int64_t>({1ll << 40})),
         "I64 value 1099511627776 at flat index 0 does not fit in int32");
  expect(make_file(R"({"__metadata__":[1]})", ""), "\"__metadata__\" is not an object");
  expect(make_file(R"({"__metadata__":{"a":1}})", ""), "value of 'a' is not a string");

  // A valid file cut short anywhere in the data section: the offsets no longer fit.
  SafeTensors st;
  st.floats["w"] = Array(Shape{4, 4}, real(1));
  save_safetensors(p, st);
  const std::string good = read_bytes(p);
  expect(good.substr(0, good.size() - 1), "out of range");
  expect(good.substr(0, 12), "exceeds");
}

TEST_CASE("safetensors: mutated files load or throw Error and never crash", "[safetensors]") {
  TempDir tmp;
  SafeTensors st;
  st.floats["a"] = Array(Shape{3, 2}, real(0.25));
  st.floats["b"] = Array(Shape{});
  st.ints["c"] = IndexArray(IndexArray::shape_type{5}, 3);
  st.metadata["m"] = "x";
  const std::string p = tmp / "fuzz.safetensors";
  save_safetensors(p, st);
  const std::string good = read_bytes(p);
  const std::size_t header_len = good.size() - 8 - (6 + 1 + 5) * 4;
  std::mt19937 gen(1234);
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    const int kind = trial % 3;
    if (kind == 0) {  // flip a few bytes anywhere
      for (int k = 0; k < 1 + int(gen() % 3); ++k) bytes[gen() % bytes.size()] = char(gen() & 0xff);
    } else if (kind == 1) {  // truncate
      bytes.resize(gen() % bytes.size());
    } else {  // overwrite a header byte with a JSON-significant character
      const char* sig = "{}[]\",:0123456789-. ";
      bytes[8 + gen() % header_len] = sig[gen() % std::strlen(sig)];
    }
    write_bytes(p, bytes);
    try {
      load_safetensors(p);
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  CHECK(loaded + rejected == 3000);
  CHECK(rejected > 1000);
}

TEST_CASE("safetensors: PyTorch fixtures load with the expected layout", "[safetensors]") {
  const std::vector<std::string> encodings = {"none", "learned", "sinusoidal", "rope", "rope_half"};
  for (const auto& enc : encodings) {
    const std::string p = std::string(PELAB_FIXTURES_DIR) + "/model_" + enc + ".safetensors";
    INFO(p);
    REQUIRE(fs::exists(p));
    SafeTensors st = load_safetensors(p);
    CHECK(st.metadata.at("fixture") == enc);  // "encoding" holds pelab's name (rope for rope_half)
    CHECK(st.get_int("input.tokens").shape() == IndexArray::shape_type{3, 12});
    CHECK(st.get_int("input.positions").shape() == IndexArray::shape_type{3, 12});
    CHECK(st.get_int("input.targets").shape() == IndexArray::shape_type{3, 12});
    CHECK(st.get_float("input.mask").shape() == Shape{3, 12});
    CHECK(st.get_float("out.logits").shape() == Shape{3, 12, 20});
    CHECK(st.get_float("out.loss").dimension() == 0);
    CHECK(st.get_float("train.losses").shape() == Shape{6});
    CHECK(st.get_float("train.grad_norms").shape() == Shape{5});
    CHECK(st.get_float("tok_emb.weight").shape() == Shape{20, 32});
    CHECK(st.get_float("head.weight").shape() == Shape{20, 32});
    CHECK(st.get_float("blocks.1.attn.qkv.weight").shape() == Shape{96, 32});
    CHECK(st.get_float("blocks.1.mlp.proj.weight").shape() == Shape{32, 128});
    CHECK(st.has("pos.weight") == (enc == "learned"));
    // Every parameter has its gradient, with the same shape.
    std::size_t params = 0;
    for (auto& [name, a] : st.floats) {
      if (name.rfind("grad.", 0) == 0 || name.rfind("out.", 0) == 0 || name.rfind("train.", 0) == 0 ||
          name.rfind("input.", 0) == 0)
        continue;
      ++params;
      INFO(name);
      CHECK(st.get_float("grad." + name).shape() == a.shape());
    }
    // tok_emb + [pos] + 2 blocks x 12 + ln_f (2) + head
    CHECK(params == (enc == "learned" ? 29u : 28u));
    // Masked-out positions carry target -1.
    const IndexArray& tg = st.get_int("input.targets");
    const Array& mask = st.get_float("input.mask");
    for (std::size_t k = 0; k < mask.size(); ++k) CHECK((mask.data()[k] == 0) == (tg.data()[k] == -1));
  }
}
