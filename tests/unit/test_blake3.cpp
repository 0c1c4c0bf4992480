// BLAKE3-256 against the official test vectors (test_vectors/test_vectors.json of the BLAKE3
// repository: input bytes i % 251, the first 32 bytes of each "hash" output) and against the
// b3sum program (Debian package b3sum, installed by scripts/install-deps.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/common/blake3.h"

namespace {

struct Vector {
    std::size_t len;
    const char* hash;
};

const Vector kVectors[] = {
    {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
    {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
    {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
    {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
    {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
    {2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
    {2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
    {3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
    {3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
    {4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"},
    {4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"},
    {5120, "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833"},
    {5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"},
    {6144, "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205"},
    {6145, "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f"},
    {7168, "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a"},
    {7169, "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"},
    {8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"},
    {8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
    {16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
    {31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
    {102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
};

// The vectors' input: bytes i % 251.
std::vector<uint8_t> vector_input(std::size_t len) {
    std::vector<uint8_t> v(len);
    for (std::size_t i = 0; i < len; i++) v[i] = (uint8_t)(i % 251);
    return v;
}

// Hex digest of bytes, one shot.
std::string hex_of(const uint8_t* data, std::size_t len) {
    uint8_t d[queen::kBlake3Bytes];
    char hex[2 * queen::kBlake3Bytes + 1];
    queen::blake3_256(data, len, d);
    queen::blake3_to_hex(d, hex);
    return hex;
}

TEST(Blake3, OfficialVectorsOneShot) {
    for (const Vector& v : kVectors) {
        std::vector<uint8_t> in = vector_input(v.len);
        EXPECT_EQ(hex_of(in.data(), in.size()), v.hash) << "input_len " << v.len;
    }
}

TEST(Blake3, OfficialVectorsIncrementalAnySplit) {
    const std::size_t steps[] = {1, 7, 63, 64, 65, 1023, 1024, 1025, 4096};
    for (const Vector& v : kVectors) {
        std::vector<uint8_t> in = vector_input(v.len);
        for (std::size_t step : steps) {
            queen::Blake3 h;
            for (std::size_t at = 0; at < in.size(); at += step)
                h.update(in.data() + at, std::min(step, in.size() - at));
            uint8_t d[queen::kBlake3Bytes];
            char hex[2 * queen::kBlake3Bytes + 1];
            h.finalize(d);
            queen::blake3_to_hex(d, hex);
            EXPECT_EQ(std::string(hex), v.hash) << "input_len " << v.len << " step " << step;
        }
    }
}

TEST(Blake3, HexParsing) {
    uint8_t d[queen::kBlake3Bytes], back[queen::kBlake3Bytes];
    queen::blake3_256("abc", 3, d);
    char hex[2 * queen::kBlake3Bytes + 1];
    queen::blake3_to_hex(d, hex);
    ASSERT_TRUE(queen::blake3_from_hex(hex, back));
    EXPECT_EQ(0, memcmp(d, back, sizeof d));
    std::string upper = hex;
    upper[0] = 'A';
    upper[1] = 'F';
    EXPECT_FALSE(queen::blake3_from_hex(upper, back));                 // uppercase: no
    EXPECT_FALSE(queen::blake3_from_hex(std::string(hex, 63), back));  // too short
    EXPECT_FALSE(queen::blake3_from_hex(std::string(hex) + "0", back));
    EXPECT_FALSE(queen::blake3_from_hex(std::string(63, '0') + "g", back));
}

// The b3sum program's digest of a file, or "" when it cannot run.
std::string b3sum_of(const std::string& path) {
    std::string cmd = "b3sum --no-names '" + path + "' 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    char buf[128] = {0};
    std::string out = fgets(buf, sizeof buf, p) ? std::string(buf) : "";
    pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

TEST(Blake3, MatchesB3sumProgram) {
    char path[] = "/tmp/queen-blake3-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::mt19937_64 rng(20261201);
    const std::size_t lens[] = {0,    1,    31,    64,    1000,       1024,   1025,
                                2047, 4097, 65536, 65537, 131072 + 3, 1 << 20};
    for (std::size_t len : lens) {
        std::vector<uint8_t> data(len);
        for (auto& b : data) b = (uint8_t)rng();
        FILE* f = fopen(path, "wb");
        ASSERT_NE(f, nullptr);
        if (len > 0) {
            ASSERT_EQ(fwrite(data.data(), 1, len, f), len);
        }
        fclose(f);
        std::string expected = b3sum_of(path);
        ASSERT_EQ(expected.size(), 64u) << "b3sum must be installed (Debian package b3sum)";
        EXPECT_EQ(hex_of(data.data(), len), expected) << "length " << len;
    }
    unlink(path);
}

}  // namespace
