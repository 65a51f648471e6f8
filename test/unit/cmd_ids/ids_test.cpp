// Command and backend identifiers: every id in the generated tables follows
// the hashing rule, forward/backward pairs differ only in the low bit, ids are
// unique, and the public headers agree with the tables.
//
// The SHA-256 here is written for this test alone (FIPS 180-4), so that the
// check does not lean on the generator's hashing.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "id_tables.h"
#include "nnc/cmd/ccv_nnc_backend.h"
#include "nnc/cmd/ccv_nnc_cmd.h"

namespace {

using nnc_test::kBackendIds;
using nnc_test::kCommandIds;

// ---------------------------------------------------------------------------
// SHA-256

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

std::array<uint32_t, 8> sha256(std::string_view text) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  // Message, a 1 bit, zeros to 56 mod 64 bytes, then the bit length (big endian).
  std::vector<uint8_t> msg(text.begin(), text.end());
  const uint64_t bits = uint64_t(text.size()) * 8;
  msg.push_back(0x80);
  while (msg.size() % 64 != 56) msg.push_back(0);
  for (int i = 7; i >= 0; --i) msg.push_back(uint8_t(bits >> (8 * i)));

  for (size_t block = 0; block < msg.size(); block += 64) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) {
      const uint8_t* b = &msg[block + 4 * t];
      w[t] = uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
    }
    for (int t = 16; t < 64; ++t) {
      const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; ++t) {
      const uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                          kRound[t] + w[t];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      k = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
  }
  return h;
}

std::string hex(const std::array<uint32_t, 8>& h) {
  std::string out;
  char buf[9];
  for (uint32_t word : h) {
    std::snprintf(buf, sizeof buf, "%08x", word);
    out += buf;
  }
  return out;
}

// The first 8 hex digits of the digest are its first 32-bit word.
uint32_t hash32(std::string_view text) { return sha256(text)[0]; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const std::map<std::string, uint32_t> kFixedIds = {
    {"CCV_NNC_NOOP", 0},          {"CCV_NNC_CUSTOM_FORWARD", 2}, {"CCV_NNC_CUSTOM_BACKWARD", 3},
    {"CCV_NNC_GRAPH_FORWARD", 4}, {"CCV_NNC_GRAPH_BACKWARD", 5},
};

// name = value pairs of the enumeration in a generated header.
std::map<std::string, uint64_t> enum_in_header(const std::string& rel) {
  std::ifstream in(std::string(NNC_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(in.good()) << "cannot read " << rel;
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::map<std::string, uint64_t> out;
  const std::regex entry(R"((CCV_NNC_\w+)\s*=\s*(0x[0-9a-fA-F]+|[0-9]+)\s*,)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), entry); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = std::stoull((*it)[2], nullptr, 0);
  return out;
}

}  // namespace

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000, 'a'))),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(CommandIds, EveryIdFollowsTheHashRule) {
  for (const auto& [id, name] : kCommandIds) {
    const std::string n = name;
    if (auto fixed = kFixedIds.find(n); fixed != kFixedIds.end()) {
      EXPECT_EQ(id, fixed->second) << n;
    } else if (ends_with(n, "_FORWARD")) {
      EXPECT_EQ(id, hash32(n.substr(0, n.size() - 8)) & ~1u) << n;
    } else if (ends_with(n, "_BACKWARD")) {
      EXPECT_EQ(id, hash32(n.substr(0, n.size() - 9)) | 1u) << n;
    } else {
      ADD_FAILURE() << n << " is neither fixed nor FORWARD/BACKWARD";
    }
  }
}

TEST(CommandIds, ForwardAndBackwardDifferOnlyInTheLowBit) {
  std::map<std::string, uint32_t> by_name;
  for (const auto& [id, name] : kCommandIds) by_name[name] = id;
  int pairs = 0;
  for (const auto& [name, id] : by_name) {
    if (!ends_with(name, "_FORWARD")) continue;
    const std::string backward = name.substr(0, name.size() - 8) + "_BACKWARD";
    ASSERT_TRUE(by_name.count(backward)) << name << " has no " << backward;
    EXPECT_EQ(id & 1u, 0u) << name;
    EXPECT_EQ(by_name[backward], id | 1u) << backward;
    ++pairs;
  }
  int backwards = 0;
  for (const auto& [name, id] : by_name) backwards += ends_with(name, "_BACKWARD");
  EXPECT_EQ(pairs, backwards);
  // CUSTOM and GRAPH plus the 69 hashed families of libnnc c6ce5b12.
  EXPECT_EQ(pairs, 2 + 69);
}

TEST(CommandIds, IdsAndNamesAreUnique) {
  std::set<uint32_t> ids;
  std::set<std::string> names;
  for (const auto& [id, name] : kCommandIds) {
    EXPECT_TRUE(ids.insert(id).second) << "id 0x" << std::hex << id << " repeats at " << name;
    EXPECT_TRUE(names.insert(name).second) << name << " repeats";
  }
  EXPECT_EQ(ids.size(), std::size(kCommandIds));
  EXPECT_EQ(std::size(kCommandIds), 5u + 2 * 69);
}

TEST(CommandIds, HeaderAgreesWithTable) {
  auto header = enum_in_header("include/nnc/cmd/ccv_nnc_cmd.h");
  ASSERT_TRUE(header.count("CCV_NNC_COUNT"));
  EXPECT_EQ(header["CCV_NNC_COUNT"], 141u);
  header.erase("CCV_NNC_COUNT");
  std::map<std::string, uint64_t> table;
  for (const auto& [id, name] : kCommandIds) table[name] = id;
  EXPECT_EQ(header, table);
}

// A few values as libnnc c6ce5b12 publishes them, checked by the compiler.
static_assert(CCV_NNC_NOOP == 0 && CCV_NNC_CUSTOM_FORWARD == 2 && CCV_NNC_CUSTOM_BACKWARD == 3 &&
              CCV_NNC_GRAPH_FORWARD == 4 && CCV_NNC_GRAPH_BACKWARD == 5);
static_assert(CCV_NNC_GEMM_FORWARD == 0x7e87d00c && CCV_NNC_GEMM_BACKWARD == 0x7e87d00d);
static_assert(CCV_NNC_EWSUM_FORWARD == 0xe21a2c4c);
static_assert(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD == 0xc26b7b5f);
static_assert(CCV_NNC_COMM_BROADCAST_FORWARD == 0x830eee);
static_assert(CCV_NNC_COUNT == 141);
static_assert(CCV_NNC_NO_BACKEND == 0 && CCV_NNC_BACKEND_COUNT == 7);
static_assert(CCV_NNC_BACKEND_CPU_REF == 0x3d9883e5 && CCV_NNC_BACKEND_GPU_CUBLAS == 0x9b8cfed);

TEST(BackendIds, EveryIdFollowsTheHashRule) {
  std::set<uint32_t> ids;
  for (const auto& [id, name] : kBackendIds) {
    const std::string n = name;
    ASSERT_EQ(n.rfind("CCV_NNC_BACKEND_", 0), 0u) << n;
    EXPECT_EQ(id, hash32(n)) << n;
    EXPECT_NE(id, 0u) << n << " collides with CCV_NNC_NO_BACKEND";
    EXPECT_TRUE(ids.insert(id).second) << n << " repeats an id";
  }
  EXPECT_EQ(std::size(kBackendIds), size_t(CCV_NNC_BACKEND_COUNT));
  std::set<std::string> names;
  for (const auto& entry : kBackendIds) names.insert(entry.name);
  const std::set<std::string> expected = {
      "CCV_NNC_BACKEND_CPU_REF",   "CCV_NNC_BACKEND_CPU_OPT",   "CCV_NNC_BACKEND_GPU_REF",
      "CCV_NNC_BACKEND_GPU_CUBLAS", "CCV_NNC_BACKEND_GPU_CUDNN", "CCV_NNC_BACKEND_GPU_NCCL",
      "CCV_NNC_BACKEND_MPS"};
  EXPECT_EQ(names, expected);
}

TEST(BackendIds, HeaderAgreesWithTable) {
  auto header = enum_in_header("include/nnc/cmd/ccv_nnc_backend.h");
  EXPECT_EQ(header["CCV_NNC_NO_BACKEND"], 0u);
  EXPECT_EQ(header["CCV_NNC_BACKEND_COUNT"], 7u);
  header.erase("CCV_NNC_NO_BACKEND");
  header.erase("CCV_NNC_BACKEND_COUNT");
  std::map<std::string, uint64_t> table;
  for (const auto& [id, name] : kBackendIds) table[name] = id;
  EXPECT_EQ(header, table);
}
