// Payload encryption (issue 27, docs/encryption.md): AES-256-GCM through the wrapper against
// published test vectors, the envelope (round trip, tamper, wrong key, rotation, IV
// uniqueness), jsonb's canonical text for content identity, opening answers, sealing request
// bodies, key loading and the settings that must never show a key.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/errors.h"
#include "common/json_scan.h"
#include "core/common/envelope_shape.h"
#include "crypto/aes_gcm.h"
#include "crypto/answer_open.h"
#include "crypto/content_id.h"
#include "crypto/envelope.h"
#include "crypto/key_ring.h"
#include "crypto/payload_seal.h"
#include "crypto/queue_modes.h"
#include "settings/settings.h"

using namespace queen::sidecar;
using namespace queen::sidecar::crypto;

namespace {

const std::string kKeyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string kKeyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

// Bytes of a hex text.
std::string unhex(const std::string& h) {
    std::string out;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
    return out;
}

// Hex text of bytes.
std::string hex(const std::string& b) {
    static const char d[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : b) {
        out.push_back(d[c >> 4]);
        out.push_back(d[c & 15]);
    }
    return out;
}

// A ring with current (and previous) keys.
void load(KeyRing* r, const std::string& cur, const std::string& prev = "") {
    ASSERT_TRUE(r->load(cur, prev).is_ok());
}

// A string member's value in a compact envelope (test helper: no escapes there).
std::string member(const std::string& env, const std::string& key) {
    const std::string k = "\"" + key + "\":\"";
    std::size_t at = env.find(k);
    if (at == std::string::npos) return "";
    at += k.size();
    return env.substr(at, env.find('"', at) - at);
}

// env with one member's value replaced.
std::string with_member(std::string env, const std::string& key, const std::string& value) {
    const std::string k = "\"" + key + "\":\"";
    std::size_t at = env.find(k) + k.size();
    env.replace(at, env.find('"', at) - at, value);
    return env;
}

// Whether text is exactly one valid JSON value.
bool valid_json(const std::string& text) {
    json::Cursor c(text.data(), text.data() + text.size());
    json::Value v;
    return c.value(&v, 0) && c.at_end();
}

}  // namespace

// ---------------------------------------------------------------- AES-256-GCM known answers
// The GCM specification's test cases 13, 14 and 16 (McGrew & Viega; also in NIST's
// gcmEncryptExtIV256 vectors): 256-bit keys, 96-bit IVs, with and without AAD.
struct Kat {
    const char* key;
    const char* iv;
    const char* aad;
    const char* pt;
    const char* ct;
    const char* tag;
};

TEST(AesGcm, KnownAnswerVectors) {
    const Kat kats[] = {
        {"0000000000000000000000000000000000000000000000000000000000000000",
         "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
        {"0000000000000000000000000000000000000000000000000000000000000000",
         "000000000000000000000000", "", "00000000000000000000000000000000",
         "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
        {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
         "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e"
         "2449a6b525b16aedf5aa0de657ba637b39",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b"
         "1056828838c5f61e6393ba7a0abcc9f662",
         "76fc6ece0f4e1768cddf8853bb2d551b"},
    };
    for (const Kat& k : kats) {
        const std::string key = unhex(k.key), iv = unhex(k.iv), aad = unhex(k.aad),
                          pt = unhex(k.pt);
        std::string sealed;
        ASSERT_TRUE(aes256gcm_seal(reinterpret_cast<const uint8_t*>(key.data()),
                                   reinterpret_cast<const uint8_t*>(iv.data()), aad, pt, &sealed));
        EXPECT_EQ(hex(sealed), std::string(k.ct) + k.tag);
        std::string back;
        ASSERT_TRUE(aes256gcm_open(reinterpret_cast<const uint8_t*>(key.data()),
                                   reinterpret_cast<const uint8_t*>(iv.data()), aad, sealed,
                                   &back));
        EXPECT_EQ(back, pt);
        // the tag is checked: one flipped bit anywhere (ciphertext, tag, AAD) fails
        for (std::size_t i = 0; i < sealed.size(); i++) {
            std::string bad = sealed;
            bad[i] = static_cast<char>(bad[i] ^ 1);
            EXPECT_FALSE(aes256gcm_open(reinterpret_cast<const uint8_t*>(key.data()),
                                        reinterpret_cast<const uint8_t*>(iv.data()), aad, bad,
                                        &back));
        }
        EXPECT_FALSE(aes256gcm_open(reinterpret_cast<const uint8_t*>(key.data()),
                                    reinterpret_cast<const uint8_t*>(iv.data()), aad + "x", sealed,
                                    &back));
        EXPECT_FALSE(aes256gcm_open(reinterpret_cast<const uint8_t*>(key.data()),
                                    reinterpret_cast<const uint8_t*>(iv.data()), aad,
                                    sealed.substr(0, sealed.size() - 1), &back));
    }
}

// ---------------------------------------------------------------- keys
TEST(KeyRing, LoadsOnlyWellFormedKeysAndNeverEchoesThem) {
    KeyRing r;
    EXPECT_TRUE(r.load("", "").is_ok());
    EXPECT_FALSE(r.has_key());
    const std::string bad = kKeyA.substr(0, 63) + "g";
    Status s = r.load(bad, "");
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(s.message().find(bad), std::string::npos);
    EXPECT_NE(s.message().find("QUEEN_ENCRYPTION_KEY"), std::string::npos);
    EXPECT_FALSE(r.load(kKeyA + "00", "").is_ok());
    EXPECT_FALSE(r.load("", kKeyA).is_ok());     // a previous key alone
    EXPECT_FALSE(r.load(kKeyA, kKeyA).is_ok());  // the same key twice
    EXPECT_FALSE(r.has_key());
    ASSERT_TRUE(r.load(kKeyA, kKeyB).is_ok());
    EXPECT_TRUE(r.has_key());
    EXPECT_EQ(r.current().kid.size(), 16u);
    EXPECT_NE(r.describe().find(r.current().kid), std::string::npos);
    EXPECT_EQ(r.describe().find(kKeyA.substr(0, 16)), std::string::npos);
    // upper-case hex is the same key
    KeyRing u;
    std::string upper = kKeyA;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    load(&u, upper);
    EXPECT_EQ(u.current().kid, r.current().kid);
}

// ---------------------------------------------------------------- the envelope
TEST(Envelope, RoundTripAndShape) {
    KeyRing r;
    load(&r, kKeyA);
    const std::string payloads[] = {
        "{\"message\":\"Hello, world!\"}", "null", "\"\"", "{}", "[1,2.50,\"\\u00e9\"]",
        std::string(100000, '7')};
    for (const std::string& p : payloads) {
        std::string env, back;
        ASSERT_TRUE(seal_payload(r, "q1", p, "", &env).is_ok());
        EXPECT_TRUE(queen::is_envelope_text(env)) << env;
        EXPECT_EQ(env.find(p.substr(0, 20)),
                  p.size() > 3 ? std::string::npos : env.find(p.substr(0, 20)));
        EXPECT_EQ(member(env, "kid"), r.current().kid);
        const OpenResult o = open_payload(r, "q1", env, &back);
        EXPECT_EQ(o.kind, OpenKind::Opened);
        EXPECT_EQ(back, p);
    }
}

TEST(Envelope, PlainPayloadsAreNotEnvelopes) {
    KeyRing r;
    load(&r, kKeyA);
    std::string back;
    for (const char* p : {"{\"a\":1}", "null", "\"$enc\"", "{\"$enc\":\"other.scheme\",\"x\":1}",
                          "[{\"$enc\":\"queen.aes256gcm.v1\"}]", "{\"$enc\":7}"})
        EXPECT_EQ(open_payload(r, "q", p, &back).kind, OpenKind::NotEnvelope) << p;
}

TEST(Envelope, AnyChangeFailsTheTag) {
    KeyRing r;
    load(&r, kKeyA);
    std::string env, back;
    ASSERT_TRUE(
        seal_payload(r, "q1", "{\"secret\":42}", "0123456789abcdef0123456789abcdef", &env).is_ok());
    ASSERT_EQ(open_payload(r, "q1", env, &back).kind, OpenKind::Opened);
    // ciphertext: every base64 character changed in turn
    const std::string ct = member(env, "ct");
    for (std::size_t i = 0; i + 2 < ct.size(); i++) {
        std::string c2 = ct;
        c2[i] = c2[i] == 'A' ? 'B' : 'A';
        EXPECT_EQ(open_payload(r, "q1", with_member(env, "ct", c2), &back).kind, OpenKind::Broken)
            << i;
    }
    // the IV, the content identity, the queue (AAD), the version
    std::string iv = member(env, "iv");
    iv[0] = iv[0] == 'A' ? 'B' : 'A';
    EXPECT_EQ(open_payload(r, "q1", with_member(env, "iv", iv), &back).kind, OpenKind::Broken);
    EXPECT_EQ(
        open_payload(r, "q1", with_member(env, "cid", "ffffffffffffffffffffffffffffffff"), &back)
            .kind,
        OpenKind::Broken);
    EXPECT_EQ(open_payload(r, "q2", env, &back).kind, OpenKind::Broken);
    std::string v2 = env;
    v2.replace(v2.find("v1"), 2, "v9");
    EXPECT_EQ(open_payload(r, "q1", v2, &back).kind, OpenKind::Broken);
    // malformed: a member missing, an extra member, a non-string member
    std::string no_iv = env;
    no_iv.erase(no_iv.find(",\"iv\""), 8 + member(env, "iv").size());
    EXPECT_EQ(open_payload(r, "q1", no_iv, &back).kind, OpenKind::Broken) << no_iv;
    std::string extra = env;
    extra.insert(extra.size() - 1, ",\"x\":1");
    EXPECT_EQ(open_payload(r, "q1", extra, &back).kind, OpenKind::Broken);
    EXPECT_EQ(open_payload(r, "q1", with_member(env, "ct", "!!!!"), &back).kind, OpenKind::Broken);
}

TEST(Envelope, WrongKeyIsUnknownNotBroken) {
    KeyRing a, b, none;
    load(&a, kKeyA);
    load(&b, kKeyB);
    std::string env, back;
    ASSERT_TRUE(seal_payload(a, "q", "{\"x\":1}", "", &env).is_ok());
    OpenResult o = open_payload(b, "q", env, &back);
    EXPECT_EQ(o.kind, OpenKind::KeyUnknown);
    EXPECT_EQ(o.kid, a.current().kid);
    EXPECT_EQ(open_payload(none, "q", env, &back).kind, OpenKind::KeyUnknown);
    // a kid that names key B on an envelope sealed by A: B's tag check fails
    EXPECT_EQ(open_payload(b, "q", with_member(env, "kid", b.current().kid), &back).kind,
              OpenKind::Broken);
}

TEST(Envelope, RotationOpensWithThePreviousKey) {
    KeyRing old_ring, rotated, after;
    load(&old_ring, kKeyA);
    load(&rotated, kKeyB, kKeyA);
    load(&after, kKeyB);
    std::string before, now, back;
    ASSERT_TRUE(seal_payload(old_ring, "q", "{\"n\":1}", "", &before).is_ok());
    ASSERT_TRUE(seal_payload(rotated, "q", "{\"n\":2}", "", &now).is_ok());
    EXPECT_EQ(member(now, "kid"), rotated.current().kid);  // the new key seals
    EXPECT_EQ(member(now, "kid"), after.current().kid);
    EXPECT_EQ(open_payload(rotated, "q", before, &back).kind, OpenKind::Opened);
    EXPECT_EQ(back, "{\"n\":1}");
    EXPECT_EQ(open_payload(rotated, "q", now, &back).kind, OpenKind::Opened);
    EXPECT_EQ(back, "{\"n\":2}");
    // once the previous key is dropped, its envelopes are KeyUnknown (never plaintext)
    EXPECT_EQ(open_payload(after, "q", before, &back).kind, OpenKind::KeyUnknown);
}

TEST(Envelope, EveryIvIsFresh) {
    KeyRing r;
    load(&r, kKeyA);
    std::set<std::string> ivs, cts;
    for (int i = 0; i < 20000; i++) {
        std::string env;
        ASSERT_TRUE(seal_payload(r, "q", "{\"same\":true}", "", &env).is_ok());
        ivs.insert(member(env, "iv"));
        cts.insert(member(env, "ct"));
    }
    EXPECT_EQ(ivs.size(), 20000u);
    EXPECT_EQ(cts.size(), 20000u);
    EXPECT_EQ(unhex(hex("x")), "x");
}

// The stored form as jsonb prints it (members reordered, spaces) opens too.
TEST(Envelope, OpensJsonbsPrintedForm) {
    KeyRing r;
    load(&r, kKeyA);
    std::string env, back;
    ASSERT_TRUE(seal_payload(r, "q", "{\"a\":[1,2]}", "", &env).is_ok());
    const std::string jsonb = "{\"ct\": \"" + member(env, "ct") + "\", \"iv\": \"" +
                              member(env, "iv") + "\", \"kid\": \"" + member(env, "kid") +
                              "\", \"$enc\": \"queen.aes256gcm.v1\"}";
    EXPECT_EQ(open_payload(r, "q", jsonb, &back).kind, OpenKind::Opened);
    EXPECT_EQ(back, "{\"a\":[1,2]}");
}

// ---------------------------------------------------------------- content identity
// Expected texts printed by PostgreSQL 15 (SELECT $x$...$x$::jsonb::text).
TEST(ContentId, CanonicalTextIsJsonbs) {
    const std::pair<const char*, const char*> cases[] = {
        {"{\"b\":2,\"a\":1}", "{\"a\": 1, \"b\": 2}"},
        {"{\"a\":1,\"a\":2}", "{\"a\": 2}"},
        {"{\"aa\":1,\"b\":{\"z\":[1,2,{\"y\":null,\"x\":true}]}}",
         "{\"b\": {\"z\": [1, 2, {\"x\": true, \"y\": null}]}, \"aa\": 1}"},
        {"[1,2.50,-0,-0.0,1e2,1E+2,1.5e-3,0.10,-1.25e1,123456789012345678901234567890,1e-5,2.5E0,"
         "0e10,-0e-2,10E-1]",
         "[1, 2.50, 0, 0.0, 100, 100, 0.0015, 0.10, -12.5, 123456789012345678901234567890, "
         "0.00001, 2.5, 0, 0.00, 1.0]"},
        {"\"a\\u00e9\\n\\t\\\"\\\\\\/\\u001f\\u007f\"", "\"a\xc3\xa9\\n\\t\\\"\\\\/\\u001f\x7f\""},
        {"\"\\ud83d\\ude00 x\"", "\"\xf0\x9f\x98\x80 x\""},
        {"{}", "{}"},
        {" [ ] ", "[]"},
        {"[{},[],\"\"]", "[{}, [], \"\"]"},
        {"true", "true"},
        {"null", "null"},
        {"-3", "-3"},
        {"{\"k\":\"v\",\"kk\":[false,null,{\"b\":1,\"a\":{\"d\":4,\"c\":3}}]}",
         "{\"k\": \"v\", \"kk\": [false, null, {\"a\": {\"c\": 3, \"d\": 4}, \"b\": 1}]}"},
    };
    for (const auto& c : cases) {
        std::string out;
        ASSERT_TRUE(jsonb_canonical_text(c.first, &out)) << c.first;
        EXPECT_EQ(out, c.second) << c.first;
    }
    std::string out;
    EXPECT_FALSE(jsonb_canonical_text("{\"a\":", &out));
    EXPECT_FALSE(jsonb_canonical_text("1e1001", &out));
}

TEST(ContentId, KeyedAndEqualForEqualJsonb) {
    KeyRing a, b;
    load(&a, kKeyA);
    load(&b, kKeyB);
    std::string c1, c2, c3;
    ASSERT_TRUE(jsonb_canonical_text("{\"a\":1,\"b\":[1,2]}", &c1));
    ASSERT_TRUE(jsonb_canonical_text("{ \"b\" : [1,2], \"a\":1 }", &c2));
    ASSERT_TRUE(jsonb_canonical_text("{\"a\":1,\"b\":[2,1]}", &c3));
    EXPECT_EQ(content_id(a.current(), c1), content_id(a.current(), c2));
    EXPECT_NE(content_id(a.current(), c1), content_id(a.current(), c3));
    EXPECT_NE(content_id(a.current(), c1), content_id(b.current(), c1));  // a rotation: new ids
    EXPECT_TRUE(queen::is_content_id(content_id(a.current(), c1)));
}

// ---------------------------------------------------------------- sealing requests
TEST(PayloadSeal, WireTransactionSealsEncryptedQueuesOnly) {
    KeyRing r;
    load(&r, kKeyA);
    const std::string body =
        "{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"enc\",\"payload\":{\"s\": 1}},"
        "{\"queue\":\"plain\",\"payload\":{\"p\":2}},{\"queue\":\"enc\"}]},"
        "{\"type\":\"ack\",\"transactionId\":\"t\",\"partitionId\":\"x\"}],\"requiredLeases\":[]}";
    std::string out;
    auto mode_of = [](const std::string& q) {
        QueueMode m;
        m.encrypted = q == "enc";
        m.by_content = true;
        return m;
    };
    ASSERT_TRUE(seal_wire_transaction(r, mode_of, body, &out).is_ok());
    EXPECT_TRUE(valid_json(out)) << out;
    EXPECT_EQ(out.find("\"s\""), std::string::npos) << out;
    EXPECT_NE(out.find("{\"queue\":\"plain\",\"payload\":{\"p\":2}}"), std::string::npos) << out;
    EXPECT_NE(out.find("{\"type\":\"ack\",\"transactionId\":\"t\",\"partitionId\":\"x\"}"),
              std::string::npos);
    // both items of "enc" carry an envelope with a content identity; the second seals null
    std::size_t at = 0;
    std::string plain;
    int seen = 0;
    while ((at = out.find("{\"$enc\"", at)) != std::string::npos) {
        const std::string env = out.substr(at, out.find('}', at) - at + 1);
        ASSERT_EQ(open_payload(r, "enc", env, &plain).kind, OpenKind::Opened) << env;
        EXPECT_EQ(plain, seen == 0 ? "{\"s\":1}" : "null");
        EXPECT_EQ(member(env, "cid").size(), 32u);
        at++;
        seen++;
    }
    EXPECT_EQ(seen, 2);
}

TEST(PayloadSeal, ItemsKeepTheirFieldsAndCarryCidOnlyWithoutTransactionId) {
    KeyRing r;
    load(&r, kKeyA);
    std::string out, plain;
    ASSERT_TRUE(
        seal_items(r, "q", QueueMode{true, true},
                   "[{\"payload\":[1, "
                   "2],\"transactionId\":\"t1\"},{\"payload\":\"x\"},{\"transactionId\":\"n\"}]",
                   &out)
            .is_ok());
    EXPECT_TRUE(valid_json(out)) << out;
    EXPECT_EQ(out.front(), '[');
    EXPECT_EQ(out.back(), ']');
    EXPECT_EQ(out.find("[1"), std::string::npos) << out;
    EXPECT_NE(out.find("\"transactionId\":\"t1\""), std::string::npos);
    EXPECT_NE(out.find("{\"transactionId\":\"n\"}"), std::string::npos) << out;  // no payload: kept
    const std::string e1 = out.substr(
        out.find("{\"$enc\""), out.find('}', out.find("{\"$enc\"")) - out.find("{\"$enc\"") + 1);
    EXPECT_EQ(member(e1, "cid"), "");  // it has a transactionId
    ASSERT_EQ(open_payload(r, "q", e1, &plain).kind, OpenKind::Opened);
    EXPECT_EQ(plain, "[1,2]");
    const std::size_t second = out.find("{\"$enc\"", out.find("{\"$enc\"") + 1);
    const std::string e2 = out.substr(second, out.find('}', second) - second + 1);
    EXPECT_EQ(member(e2, "cid").size(), 32u);
    ASSERT_EQ(open_payload(r, "q", e2, &plain).kind, OpenKind::Opened);
    EXPECT_EQ(plain, "\"x\"");
}

// ---------------------------------------------------------------- opening answers
TEST(AnswerOpen, PopAnswerOpenedInPlace) {
    KeyRing r, other;
    load(&r, kKeyA);
    load(&other, kKeyB);
    std::string e1, e2, e3;
    ASSERT_TRUE(seal_payload(r, "q", "{\"message\":\"Hello, world!\"}", "", &e1).is_ok());
    ASSERT_TRUE(seal_payload(r, "other-queue", "{\"moved\":1}", "", &e2).is_ok());  // wrong queue
    ASSERT_TRUE(seal_payload(other, "q", "{\"k\":1}", "", &e3).is_ok());
    auto answer = [](const std::string& d1, const std::string& d2) {
        return "{\"queue\": \"q\", \"success\": true, \"messages\": [{\"id\": \"i1\", \"data\": " +
               d1 + ", \"partition\": \"p\"}, {\"id\": \"i2\", \"data\": " + d2 +
               "}, {\"id\": \"i3\", \"data\": {\"plain\": 1}}], \"leaseId\": \"L\"}";
    };
    std::string out;
    AnswerOpen st;
    ASSERT_TRUE(open_answer(r, answer(e1, e2), "data", &out, &st));
    EXPECT_EQ(st.opened, 1);
    EXPECT_EQ(st.broken, 1);
    EXPECT_EQ(out, answer("{\"message\":\"Hello, world!\"}",
                          "null,\"decryptionError\":\"decryption_failed\""));
    AnswerOpen st2;
    ASSERT_TRUE(open_answer(r, answer(e1, e3), "data", &out, &st2));
    EXPECT_EQ(st2.key_unknown, 1);
    EXPECT_EQ(st2.unknown_kid, other.current().kid);
    // a DLQ answer names each message's queue
    AnswerOpen st3;
    ASSERT_TRUE(open_answer(r,
                            "{\"messages\": [{\"data\": " + e2 + ", \"queue\": \"other-queue\"}]}",
                            "data", &out, &st3));
    EXPECT_EQ(st3.opened, 1);
    EXPECT_EQ(out, "{\"messages\": [{\"data\": {\"moved\":1}, \"queue\": \"other-queue\"}]}");
    EXPECT_FALSE(open_answer(r, "[1]", "data", &out, &st3));
}

// ---------------------------------------------------------------- the memo
TEST(QueueModes, TtlAndForget) {
    QueueModes m(1000);
    QueueMode got;
    EXPECT_FALSE(m.get("q", 0, &got));
    m.put("q", QueueMode{true, false}, 100);
    ASSERT_TRUE(m.get("q", 1099, &got));
    EXPECT_TRUE(got.encrypted);
    EXPECT_FALSE(m.get("q", 1100, &got));
    m.put("q", QueueMode{true, false}, 2000);
    m.forget("q");
    EXPECT_FALSE(m.get("q", 2001, &got));
}

// ---------------------------------------------------------------- settings and errors
TEST(EncryptionSettings, KeysAreSecretRows) {
    Settings st;
    st.encryption_key = kKeyA;
    const std::string line = settings_effective(st);
    EXPECT_EQ(line.find(kKeyA), std::string::npos);
    EXPECT_NE(line.find("encryption-key=***"), std::string::npos);
    EXPECT_NE(settings_effective(Settings()).find("encryption-key=\"\""), std::string::npos);
    // a malformed key stops the start with a message that does not show it
    const std::string bad = "not-a-key-" + kKeyA.substr(10);
    setenv("QUEEN_ENCRYPTION_KEY", bad.c_str(), 1);
    Settings st2;
    SettingsRequest req;
    char arg0[] = "queen-sidecar";
    char* argv[] = {arg0};
    Status s = load_settings(1, argv, &st2, &req);
    unsetenv("QUEEN_ENCRYPTION_KEY");
    EXPECT_FALSE(s.is_ok());
    EXPECT_EQ(s.message().find(bad), std::string::npos);
    EXPECT_NE(s.message().find("QUEEN_ENCRYPTION_KEY"), std::string::npos) << s.message();
}

TEST(EncryptionErrors, UnsealedPushRefusalDependsOnTheKey) {
    Status s(
        StatusCode::BadRequest,
        "ERROR:  message 0: the queue is encrypted and this payload is not an encryption envelope",
        "22QE1");
    set_encryption_key_configured(true);
    PublicError e = public_error(s);
    EXPECT_EQ(e.http, 409);
    EXPECT_EQ(e.code, "encryption_required");
    set_encryption_key_configured(false);
    e = public_error(s);
    EXPECT_EQ(e.http, 503);
    EXPECT_EQ(e.code, "encryption_key_missing");
    e = public_error(
        Status(StatusCode::Internal, "ERROR:  queue \"q\" holds messages: ...", "55QE1"));
    EXPECT_EQ(e.http, 409);
    EXPECT_EQ(e.code, "encryption_queue_not_empty");
}
