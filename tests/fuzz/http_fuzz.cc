// libFuzzer target: the HTTP request parser. Any bytes: no crash, no read
// past the buffer (ASan), and the same result however the bytes are split.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "net/http.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	// A copy of exactly `size` bytes, so ASan sees any over-read.
	char *buf = static_cast<char *>(malloc(size ? size : 1));
	memcpy(buf, data, size);
	http_parser p;
	http_request whole, part;
	http_parser_reset(&p);
	int want = http_parse(&p, buf, size, &whole);
	if (want == 1 && (whole.head_len == 0 || whole.head_len > size || whole.target + whole.target_len > buf + size))
		abort();
	// Split at a point derived from the data, then feed it in two calls.
	size_t cut = size ? (data[0] * 257u + (size > 1 ? data[size - 1] : 0)) % (size + 1) : 0;
	http_parser_reset(&p);
	int got = http_parse(&p, buf, cut, &part);
	if (got == 0)
		got = http_parse(&p, buf, size, &part);
	bool both_refused = want < 0 && got < 0;
	if (!both_refused && got != want) {
		fprintf(stderr, "split at %zu: %d, whole: %d\n", cut, got, want);
		abort();
	}
	if (got == 1 && part.head_len != whole.head_len)
		abort();
	free(buf);
	return 0;
}
