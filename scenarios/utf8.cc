// scenarios::FirstInvalidUtf8 (scenarios/scenario.h): the UTF-8 check every text field of a
// scenario passes before it is used (validate.cc's CheckUtf8).
#include <optional>
#include <string_view>

#include "scenarios/scenario.h"

namespace trainsim::scenarios {

std::optional<size_t> FirstInvalidUtf8(std::string_view text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = b[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629, table 3-7)
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
      if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // no overlong 4-byte forms
      if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;  // a continuation byte, 0xC0/0xC1 or 0xF5..0xFF as a lead byte
    }
    if (i + len > n || b[i + 1] < lo || b[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (b[i + k] < 0x80 || b[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace trainsim::scenarios
