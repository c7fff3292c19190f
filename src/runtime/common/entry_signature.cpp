#include "runtime/common/entry_signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <atomic>
#include <cstdio>

#include <fmt/format.h>

#include "options/options.h"
#include "stitch/error.h"

namespace stitch::runtime {
namespace {

constexpr std::string_view kTagPrefix = "hmac-sha256 ";

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const bool ok = EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) == 1;
  STITCH_ASSERT(ok && length == 32, "OpenSSL's SHA-256 failed");
  std::string hex;
  hex.reserve(64);
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::optional<std::string> cache_secret() { return environment_options().cache_secret; }

std::string entry_tag(std::string_view secret, std::string_view key, std::string_view bytes) {
  // The key's length goes first, so that no key and bytes run together into
  // another key's (a key is 64 hex digits today; the tag does not rely on it).
  const std::string header = fmt::format("stitch-cache-entry-v1\n{} {}\n", key.size(), key);
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest_name, 0), OSSL_PARAM_construct_end()};
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t length = 0;
  const bool ok = ctx && EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), params) == 1 &&
                  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(header.data()), header.size()) == 1 &&
                  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) == 1 &&
                  EVP_MAC_final(ctx, out, &length, sizeof out) == 1;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  STITCH_ASSERT(ok && length == 32, "OpenSSL's HMAC-SHA256 failed");
  std::string tag(kTagPrefix);
  for (size_t i = 0; i < length; ++i) tag += fmt::format("{:02x}", out[i]);
  return tag;
}

bool entry_tag_verifies(std::string_view secret, std::string_view key, std::string_view bytes, std::string_view tag) {
  const std::string want = entry_tag(secret, key, bytes);
  return tag.size() == want.size() && CRYPTO_memcmp(tag.data(), want.data(), want.size()) == 0;
}

void warn_unverified_entry_once(const std::string& path) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "stitch: warning: the kernel cache entry %s does not carry a valid signature under "
               "STITCH_CACHE_KEY: not loaded, compiled afresh (further ones are counted, not warned about)\n",
               path.c_str());
}

}  // namespace stitch::runtime
