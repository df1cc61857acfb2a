// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface: the hash the hub publishes as the LFS oid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace dllm::hub {

/// Incremental SHA-256. Not copyable.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n_bytes);
  /// Lower-case 64-hex digest; the object is spent afterwards (call reset() to reuse).
  std::string hex_digest();
  void reset();

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so OpenSSL headers stay out of this header
};

/// SHA-256 of the first `n_bytes` bytes of a file (all of it when n_bytes is UINT64_MAX), fed into
/// `hasher` (not finalized, so a download can continue it). Returns the bytes read. Throws dllm::Error
/// naming the path when it cannot be read.
uint64_t sha256_update_from_file(Sha256& hasher, const std::filesystem::path& path,
                                 uint64_t n_bytes = UINT64_MAX);

/// Lower-case 64-hex SHA-256 of a whole file. Throws dllm::Error when unreadable.
std::string sha256_file(const std::filesystem::path& path);

/// True for 64 lower- or upper-case hex digits.
bool is_sha256_hex(const std::string& s);

}  // namespace dllm::hub
