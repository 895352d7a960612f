// libFuzzer target: the HTTP request parser and the chunked body decoder.
// Any bytes: no crash, no read past the buffer (ASan), and the same result
// however the bytes are split.
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
	// A chunked head: the bytes after it as the body, whole and split at
	// a point derived from the data: the same result, the same end, never
	// a byte consumed past the buffer. A small limit, so 413 is reached.
	if (want == 1 && whole.chunked) {
		const char *body = buf + whole.head_len;
		size_t blen = size - whole.head_len, used_whole = 0, u1 = 0, u2 = 0;
		http_chunked d;
		http_chunked_init(&d, 64);
		int bw = http_chunked_feed(&d, body, blen, &used_whole);
		if (used_whole > blen || (bw == 0 && used_whole != blen))
			abort();
		size_t bcut = blen ? (data[size / 2] * 131u) % (blen + 1) : 0;
		http_chunked_init(&d, 64);
		int bp = http_chunked_feed(&d, body, bcut, &u1);
		if (bp == 0) {
			bp = http_chunked_feed(&d, body + bcut, blen - bcut, &u2);
			u2 += bcut;
		} else {
			u2 = u1;
		}
		if (!(bw < 0 && bp < 0) && (bp != bw || (bw == 1 && u2 != used_whole))) {
			fprintf(stderr, "chunked body split at %zu: %d (%zu), whole: %d (%zu)\n", bcut, bp, u2, bw,
				used_whole);
			abort();
		}
	}
	free(buf);
	return 0;
}
