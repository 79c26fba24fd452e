// Not ISA-L's crc32_iscsi (libisal-dev): same CRCs, 10-22x faster, but ~10 ms a checkpoint does not pay for a
// dependency; ./build/bench/bench_libraries (1-64 MiB), docs/performance.md "Libraries we did not adopt".
// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78; init and final xor 0xFFFFFFFF), the
// checksum of iSCSI (RFC 3720), ext4 and LevelDB. pelab uses it to detect corrupted checkpoint files:
// it catches every burst error up to 32 bits and random damage with probability 1 - 2^-32. Not a
// defence against deliberate tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pelab {

// Continues a CRC32C over n more bytes: crc32c(b, n2, crc32c(a, n1)) == crc32c(a ++ b). Start from 0.
std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc = 0);
inline std::uint32_t crc32c(const std::string& s, std::uint32_t crc = 0) { return crc32c(s.data(), s.size(), crc); }

// The bitwise definition (one bit per iteration), the reference the table-driven crc32c is tested against.
std::uint32_t crc32c_reference(const void* data, std::size_t n, std::uint32_t crc = 0);

// 8 lowercase hex digits, as stored in checkpoint manifests.
std::string crc32c_hex(std::uint32_t crc);

}  // namespace pelab
