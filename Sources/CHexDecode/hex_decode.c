// See include/CHexDecode.h.
#include "CHexDecode.h"

#if defined(__SSE2__)
#include <emmintrin.h>

// Sixteen digits into eight bytes: each byte classified as a digit or a letter (unsigned
// v - base <= limit, as min(v - base, limit) == v - base), its nibble selected, and the pairs (a
// 16-bit lane: first digit low, second high) folded into bytes and packed.
static inline bool decode16(const uint8_t *text, uint8_t *out) {
    __m128i bytes = _mm_loadu_si128((const __m128i *)text);
    __m128i digit = _mm_sub_epi8(bytes, _mm_set1_epi8('0'));
    __m128i letter = _mm_sub_epi8(_mm_or_si128(bytes, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
    __m128i is_digit = _mm_cmpeq_epi8(_mm_min_epu8(digit, _mm_set1_epi8(9)), digit);
    __m128i is_letter = _mm_cmpeq_epi8(_mm_min_epu8(letter, _mm_set1_epi8(5)), letter);
    if (_mm_movemask_epi8(_mm_or_si128(is_digit, is_letter)) != 0xFFFF) return false;
    __m128i nibbles = _mm_or_si128(_mm_and_si128(is_digit, digit),
                                   _mm_and_si128(is_letter, _mm_add_epi8(letter, _mm_set1_epi8(10))));
    __m128i high = _mm_slli_epi16(_mm_and_si128(nibbles, _mm_set1_epi16(0x00FF)), 4);
    __m128i low = _mm_srli_epi16(nibbles, 8);
    __m128i packed = _mm_packus_epi16(_mm_or_si128(high, low), _mm_setzero_si128());
    _mm_storel_epi64((__m128i *)out, packed);
    return true;
}

bool lp_hex_decode64(const void *text, void *out) {
    const uint8_t *digits = text;
    uint8_t *bytes = out;
    // Evaluated all four, so the common case has one branch.
    bool ok = decode16(digits, bytes);
    ok &= decode16(digits + 16, bytes + 8);
    ok &= decode16(digits + 32, bytes + 16);
    ok &= decode16(digits + 48, bytes + 24);
    return ok;
}

#else

static inline int nibble(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool lp_hex_decode64(const void *text, void *out) {
    const uint8_t *digits = text;
    uint8_t *bytes = out;
    for (int i = 0; i < 32; i++) {
        int high = nibble(digits[2 * i]), low = nibble(digits[2 * i + 1]);
        if (high < 0 || low < 0) return false;
        bytes[i] = (uint8_t)(high << 4 | low);
    }
    return true;
}

#endif
