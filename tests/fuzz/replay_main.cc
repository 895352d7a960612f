// Runs a fuzz target over every file of its corpus directories: the corpus
// as a regression test in the ordinary build (and under ASan, valgrind),
// without libFuzzer. Prints "N passed, N failed".
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
	int passed = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "no corpus at %s\n", argv[i]);
			return 1;
		}
		while (dirent *e = readdir(d)) {
			if (e->d_name[0] == '.')
				continue;
			std::string path = std::string(argv[i]) + "/" + e->d_name;
			FILE *f = fopen(path.c_str(), "rb");
			if (!f)
				continue;
			std::vector<uint8_t> buf;
			int c;
			while ((c = fgetc(f)) != EOF)
				buf.push_back(uint8_t(c));
			fclose(f);
			LLVMFuzzerTestOneInput(buf.data(), buf.size()); // aborts on a finding
			passed++;
		}
		closedir(d);
	}
	printf("%d passed, 0 failed\n", passed);
	return passed > 0 ? 0 : 1;
}
