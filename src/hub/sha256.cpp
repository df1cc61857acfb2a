// SHA-256 through OpenSSL EVP (libcrypto).
#include "hub/sha256.h"

#include <openssl/evp.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace dllm::hub {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw Error("out of memory creating a SHA-256 context");
  reset();
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void Sha256::reset() {
  if (EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL could not start a SHA-256 digest");
  }
}

void Sha256::update(const void* data, size_t n_bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n_bytes);
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &n);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

uint64_t sha256_update_from_file(Sha256& hasher, const std::filesystem::path& path, uint64_t n_bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  uint64_t done = 0;
  while (done < n_bytes) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), n_bytes - done));
    size_t got = std::fread(buf.data(), 1, want, f);
    if (got == 0) break;
    hasher.update(buf.data(), got);
    done += got;
  }
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw Error("read error on " + path.string());
  return done;
}

std::string sha256_file(const std::filesystem::path& path) {
  Sha256 h;
  sha256_update_from_file(h, path);
  return h.hex_digest();
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace dllm::hub
