/*
 * float_text.cc - a double as Prometheus writes a sample; see float_text.h.
 */
#include "web/float_text.h"

#include <charconv>
#include <cmath>
#include <cstring>

extern "C" size_t float_text(double v, char *buf)
{
	const char *fixed = std::isnan(v) ? "NaN" : std::isinf(v) ? (v > 0 ? "+Inf" : "-Inf") :
			    nullptr;
	std::to_chars_result r;

	if (fixed) {
		std::strcpy(buf, fixed);
		return std::strlen(fixed);
	}
	r = std::to_chars(buf, buf + FLOAT_TEXT_MAX - 1, v, std::chars_format::fixed);
	if (r.ec != std::errc()) {	/* cannot happen: the longest fits */
		std::strcpy(buf, "NaN");
		return 3;
	}
	*r.ptr = '\0';
	return (size_t)(r.ptr - buf);
}
