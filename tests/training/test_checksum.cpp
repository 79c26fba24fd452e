// CRC32C: the standard check value, the RFC 3720 (iSCSI) test vectors, incremental use, and the
// table-driven version against the bitwise definition on random data of every length mod 8.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "training/checksum.hpp"

using namespace pelab;

namespace {
std::uint32_t both(const std::vector<unsigned char>& v) {
  const std::uint32_t fast = crc32c(v.data(), v.size()), ref = crc32c_reference(v.data(), v.size());
  CHECK(fast == ref);
  return fast;
}
}  // namespace

TEST_CASE("crc32c matches the standard check value and RFC 3720 test vectors", "[checksum]") {
  const std::string check = "123456789";
  CHECK(crc32c(check) == 0xE3069283u);
  CHECK(crc32c_reference(check.data(), check.size()) == 0xE3069283u);
  CHECK(crc32c(std::string()) == 0u);

  // RFC 3720 appendix B.4.
  std::vector<unsigned char> v(32, 0x00);
  CHECK(both(v) == 0x8A9136AAu);
  std::fill(v.begin(), v.end(), 0xFF);
  CHECK(both(v) == 0x62A8AB43u);
  for (std::size_t i = 0; i < 32; ++i) v[i] = static_cast<unsigned char>(i);
  CHECK(both(v) == 0x46DD794Eu);
  for (std::size_t i = 0; i < 32; ++i) v[i] = static_cast<unsigned char>(31 - i);
  CHECK(both(v) == 0x113FDB5Cu);
  const std::vector<unsigned char> scsi_read = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
      0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  CHECK(both(scsi_read) == 0xD9963A56u);
}

TEST_CASE("crc32c continues across chunks and agrees with the bitwise reference", "[checksum]") {
  Rng rng(7);
  std::vector<unsigned char> data(1000);
  for (auto& b : data) b = static_cast<unsigned char>(rng.below(256));
  for (std::size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 999, 1000}) {
    INFO("n = " << n);
    const std::uint32_t whole = crc32c(data.data(), n);
    CHECK(whole == crc32c_reference(data.data(), n));
    for (std::size_t cut : {std::size_t(0), n / 3, n / 2, n}) {
      INFO("cut = " << cut);
      CHECK(crc32c(data.data() + cut, n - cut, crc32c(data.data(), cut)) == whole);
      CHECK(crc32c_reference(data.data() + cut, n - cut, crc32c_reference(data.data(), cut)) == whole);
    }
  }
  // Any single flipped bit changes the checksum.
  const std::uint32_t base = crc32c(data.data(), data.size());
  for (std::size_t i = 0; i < data.size(); i += 37)
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= static_cast<unsigned char>(1 << bit);
      CHECK(crc32c(data.data(), data.size()) != base);
      data[i] ^= static_cast<unsigned char>(1 << bit);
    }
}

TEST_CASE("crc32c_hex writes 8 lowercase hex digits", "[checksum]") {
  CHECK(crc32c_hex(0xE3069283u) == "e3069283");
  CHECK(crc32c_hex(0x0000ABCDu) == "0000abcd");
  CHECK(crc32c_hex(0u) == "00000000");
}
