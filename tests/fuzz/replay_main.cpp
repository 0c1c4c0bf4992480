// A plain driver for the sidecar's fuzz target: runs LLVMFuzzerTestOneInput once over every
// file named on the command line (the seed corpus tests/fuzz/corpus), so the corpus is
// replayed under ASan + UBSan with g++ and no libFuzzer. A finding traps (non-zero exit).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// Replay each file; print how many ran.
int main(int argc, char** argv) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        std::ifstream f(argv[i], std::ios::binary);
        if (!f) {
            std::fprintf(stderr, "cannot read %s\n", argv[i]);
            return 2;
        }
        std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
        n++;
    }
    std::printf("replayed %d inputs\n", n);
    return n > 0 ? 0 : 2;
}
