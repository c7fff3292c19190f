// Signed kernel-cache entries (docs/kernel-cache.md, Signed entries): with a
// secret (STITCH_CACHE_KEY or STITCH_CACHE_KEY_FILE), every entry written
// carries an HMAC-SHA256 tag over its cache key and its bytes, in
// <key>.tag beside the entry, so that an entry can neither be altered nor
// served under another key by anyone without the secret. A reader with the
// secret loads an entry only when its tag verifies. The CPU kernel cache
// and the CUDA cubin cache both use it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stitch::runtime {

// SHA-256 of `data` as 64 lowercase hex digits (OpenSSL's libcrypto): the
// kernel caches' keys and checksums; a cryptographic hash makes accidental
// key collisions a non-issue.
std::string sha256_hex(std::string_view data);

// The secret of the environment (options/options.h), or none.
std::optional<std::string> cache_secret();

// The tag of an entry: "hmac-sha256 " and 64 hex digits of HMAC-SHA256 under
// `secret` over a version line, the key and the bytes (OpenSSL's libcrypto).
std::string entry_tag(std::string_view secret, std::string_view key, std::string_view bytes);

// Whether `tag` (a <key>.tag file's contents) is the tag of these bytes
// under this key and secret; compared in constant time.
bool entry_tag_verifies(std::string_view secret, std::string_view key, std::string_view bytes, std::string_view tag);

// Warns on stderr, once per process, that the entry at `path` failed its
// signature check and is compiled afresh instead of loaded.
void warn_unverified_entry_once(const std::string& path);

}  // namespace stitch::runtime
