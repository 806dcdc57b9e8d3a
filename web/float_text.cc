/*
 * float_text.cc - a double as Prometheus writes a sample; see float_text.h.
 */
#include "web/float_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

/* Decimal digits of u, at least one. */
static int digit_count(uint64_t u)
{
	static const uint64_t pow10[] = { 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL,
		1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL,
		100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
		1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL, 10000000000000000000ULL };
	int n = 1;

	while (n < 20 && u >= pow10[n - 1])
		n++;
	return n;
}

/* The n lowest decimal digits of u into p[0..n), zero-padded, two at a time. */
static void put_digits(char *p, uint64_t u, int n)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";

	while (n >= 2) {
		unsigned r = (unsigned)(u % 100);

		u /= 100;
		n -= 2;
		p[n] = pairs[2 * r];
		p[n + 1] = pairs[2 * r + 1];
	}
	if (n)
		p[0] = (char)('0' + (int)(u % 10));
}

extern "C" size_t uint_text(uint64_t u, char *buf)
{
	int n = digit_count(u);

	put_digits(buf, u, n);
	return (size_t)n;
}

#define TEN19 10000000000000000000ULL

/*
 * v written exactly when that is also its shortest text; returns the
 * length, or 0 when v is not of that kind (the caller falls back on Ryu).
 *
 * A finite v is M / 2^k, M odd, so its exact decimal ends in a 5 at the
 * k-th fractional digit (M * 5^k / 10^k).  Say that decimal has s <= 16
 * significant digits, the first at 10^E.  A decimal of fewer digits at or
 * above 10^E is a multiple of 10^(E-s+2), so at least 5 * 10^(E-s+1) >=
 * 5 * 10^(E-15) from v, while half an ulp of v is below 10^(E+1) * 2^-53 <
 * 1.12 * 10^(E-15); one below 10^E is a multiple of 10^(E-s+1), as v is,
 * so at least 10^(E-15) from it, and to be near it v must be within an ulp
 * of 10^E, where half an ulp is below 2.3 * 10^(E-16).  So none reads
 * back as v, and the exact decimal is the shortest (and closest) one.
 * Integers below 10^15 are exact and shortest the same way.  Most sample values are of
 * this kind (counts, bytes, ratios of 2^-16), and this costs a fraction
 * of the general algorithm.  64-bit arithmetic but for one product.
 */
static size_t exact_text(double v, char *buf)
{
	static const uint64_t pow5[28] = { 1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL,
		15625ULL, 78125ULL, 390625ULL, 1953125ULL, 9765625ULL, 48828125ULL,
		244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL, 152587890625ULL,
		762939453125ULL, 3814697265625ULL, 19073486328125ULL, 95367431640625ULL,
		476837158203125ULL, 2384185791015625ULL, 11920928955078125ULL,
		59604644775390625ULL, 298023223876953125ULL, 1490116119384765625ULL,
		7450580596923828125ULL };
	double a = std::fabs(v);
	uint64_t bits, m, ipart, hi, lo;
	unsigned __int128 frac;
	char *p = buf;
	int k, tz, idigits = 0, sig;

	if (a == 0 || a >= 1e15)
		return 0;
	std::memcpy(&bits, &a, sizeof(bits));
	if (!(bits >> 52))
		return 0;		/* subnormal: far below anything written exactly */
	/* a = m / 2^k: the 53-bit significand, k >= 3 below 10^15 */
	m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
	k = 1075 - (int)(bits >> 52);
	tz = __builtin_ctzll(m);
	if (tz >= k) {
		ipart = m >> k;
		k = 0;
	} else {
		m >>= tz;
		k -= tz;
		if (k > 27)		/* 5^k fits 64 bits up to here */
			return 0;
		ipart = m >> k;
	}
	if (v < 0)
		*p++ = '-';
	if (ipart)
		idigits = digit_count(ipart);
	if (!k) {
		put_digits(p, ipart, idigits);
		p += idigits;
		*p = '\0';
		return (size_t)(p - buf);
	}
	/* the k fractional digits: frac / 10^k */
	frac = (unsigned __int128)(m & ((1ULL << k) - 1)) * pow5[k];
	if (k > 19) {
		hi = (uint64_t)(frac / TEN19);
		lo = (uint64_t)(frac % TEN19);
	} else {
		hi = 0;
		lo = (uint64_t)frac;
	}
	/* significant: the integer's digits and every fractional one, else from the first non-zero */
	sig = ipart ? idigits + k : hi ? digit_count(hi) + 19 : digit_count(lo);
	if (sig > 16)
		return 0;
	if (ipart) {
		put_digits(p, ipart, idigits);
		p += idigits;
	} else {
		*p++ = '0';
	}
	*p++ = '.';
	if (k > 19) {
		put_digits(p, hi, k - 19);
		p += k - 19;
		put_digits(p, lo, 19);
		p += 19;
	} else {
		put_digits(p, lo, k);
		p += k;
	}
	*p = '\0';
	return (size_t)(p - buf);
}

/*
 * v's shortest digits (Ryu, in scientific form) laid out in plain notation
 * as Go's 'f' format does: "1e+21" is a 1 and 21 zeros (the digits that
 * round-trip, then zeros, not the double's exact expansion), "1.5e-07" is
 * 0.00000015.
 */
static size_t shortest_text(double v, char *buf)
{
	char sci[40], *p = buf;
	const char *digits, *e;
	std::to_chars_result r = std::to_chars(sci, sci + sizeof(sci) - 1, v,
					       std::chars_format::scientific);
	int exp, nd = 0;
	char d[20];

	if (r.ec != std::errc())	/* cannot happen: 17 digits and an exponent fit */
		return 0;
	*r.ptr = '\0';
	digits = sci;
	if (*digits == '-') {
		*p++ = '-';
		digits++;
	}
	e = std::strchr(digits, 'e');
	for (const char *q = digits; q < e; q++)
		if (*q != '.')
			d[nd++] = *q;
	exp = std::atoi(e + 1);
	if (exp >= nd - 1) {		/* an integer: the digits, then zeros */
		std::memcpy(p, d, (size_t)nd);
		p += nd;
		for (int i = 0; i < exp - (nd - 1); i++)
			*p++ = '0';
	} else if (exp >= 0) {
		std::memcpy(p, d, (size_t)exp + 1);
		p += exp + 1;
		*p++ = '.';
		std::memcpy(p, d + exp + 1, (size_t)(nd - exp - 1));
		p += nd - exp - 1;
	} else {
		*p++ = '0';
		*p++ = '.';
		for (int i = 0; i < -exp - 1; i++)
			*p++ = '0';
		std::memcpy(p, d, (size_t)nd);
		p += nd;
	}
	*p = '\0';
	return (size_t)(p - buf);
}

extern "C" size_t float_text(double v, char *buf)
{
	const char *fixed = std::isnan(v) ? "NaN" : std::isinf(v) ? (v > 0 ? "+Inf" : "-Inf") :
			    v == 0 ? (std::signbit(v) ? "-0" : "0") : nullptr;
	size_t n;

	if (fixed) {
		std::strcpy(buf, fixed);
		return std::strlen(fixed);
	}
	n = exact_text(v, buf);
	if (!n)
		n = shortest_text(v, buf);
	if (!n) {
		std::strcpy(buf, "NaN");
		return 3;
	}
	return n;
}
