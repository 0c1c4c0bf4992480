// The envelope's sealing and opening (see envelope.h).
#include "crypto/envelope.h"

#include <openssl/evp.h>

#include <cstring>

#include "common/json_scan.h"
#include "core/common/envelope_shape.h"

namespace queen::sidecar::crypto {

namespace {

// Standard base64 with padding (EVP_EncodeBlock).
std::string base64(std::string_view in) {
    std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(in.data()),
                                  static_cast<int>(in.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

// Decode standard base64 with padding (EVP_DecodeBlock, padding bytes taken off); false for
// anything else.
bool unbase64(std::string_view in, std::string* out) {
    if (in.empty() || in.size() % 4 != 0 || in.size() > (1u << 30)) return false;
    for (char c : in)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/' || c == '='))
            return false;
    out->assign(3 * (in.size() / 4), '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out->data()),
                                  reinterpret_cast<const unsigned char*>(in.data()),
                                  static_cast<int>(in.size()));
    if (n < 0) return false;
    std::size_t pad = 0;
    if (in.back() == '=') pad++;
    if (in.size() >= 2 && in[in.size() - 2] == '=') pad++;
    out->resize(static_cast<std::size_t>(n) - pad);
    return true;
}

// The additional authenticated data: what lies outside the ciphertext, and its queue.
std::string aad_of(std::string_view version, std::string_view kid, std::string_view queue,
                   std::string_view cid) {
    std::string a;
    a.reserve(version.size() + kid.size() + queue.size() + cid.size() + 3);
    a.append(version).push_back('\0');
    a.append(kid).push_back('\0');
    a.append(queue).push_back('\0');
    a.append(cid);
    return a;
}

// The members of a stored envelope (string values, escapes never needed: hex and base64).
struct Members {
    bool marker = false, kid = false, iv = false, ct = false, cid = false, other = false;
    std::string_view version, kid_v, iv_v, ct_v, cid_v;
};

// Scan the top object of stored: false when it is not a JSON object. Non-string or escaped
// values of the envelope's members count as `other` (never produced by the sidecar).
bool scan_members(std::string_view stored, Members* m) {
    json::Cursor c(stored.data(), stored.data() + stored.size());
    if (c.peek() != '{') return false;
    c.consume('{');
    if (c.consume('}')) return true;
    for (;;) {
        json::Value key, v;
        if (c.peek() != '"' || !c.string(&key) || !c.expect(':') || !c.value(&v, 1)) return false;
        const std::string_view k = key.escaped ? std::string_view() : key.text();
        const bool str = v.kind == json::Kind::String && !v.escaped;
        auto take = [&](bool* seen, std::string_view* val) {
            if (*seen || !str) m->other = true;
            *seen = true;
            *val = v.text();
        };
        if (k == queen::kEnvelopeMarker)
            take(&m->marker, &m->version);
        else if (k == "kid")
            take(&m->kid, &m->kid_v);
        else if (k == "iv")
            take(&m->iv, &m->iv_v);
        else if (k == "ct")
            take(&m->ct, &m->ct_v);
        else if (k == "cid")
            take(&m->cid, &m->cid_v);
        else
            m->other = true;
        if (c.consume(',')) continue;
        return c.expect('}') && c.at_end();
    }
}

}  // namespace

// Fresh IV, AAD over version, kid, queue and cid, then the compact text form.
Status seal_payload(const KeyRing& ring, std::string_view queue, std::string_view plaintext,
                    std::string_view cid, std::string* out) {
    const PayloadKey& k = ring.current();
    uint8_t iv[kIvBytes];
    if (!random_iv(iv)) return Status(StatusCode::Internal, "no random bytes for an IV");
    std::string sealed;
    if (!aes256gcm_seal(k.key.data(), iv, aad_of(queen::kEnvelopeVersion, k.kid, queue, cid),
                        plaintext, &sealed))
        return Status(StatusCode::Internal, "AES-256-GCM sealing failed");
    out->clear();
    out->reserve(queen::kEnvelopePrefix.size() + 64 + sealed.size() * 4 / 3 + cid.size() + 16);
    out->append(queen::kEnvelopePrefix);
    out->append("\"kid\":\"").append(k.kid);
    out->append("\",\"iv\":\"")
        .append(base64(std::string_view(reinterpret_cast<const char*>(iv), kIvBytes)));
    out->append("\",\"ct\":\"").append(base64(sealed));
    if (!cid.empty()) out->append("\",\"cid\":\"").append(cid);
    out->append("\"}");
    return Status::ok();
}

// Recognise, check the shape, find the key, then the tag decides.
OpenResult open_payload(const KeyRing& ring, std::string_view queue, std::string_view stored,
                        std::string* plaintext) {
    OpenResult r;
    // Most payloads are not envelopes: a byte search settles them without a scan.
    if (stored.find("\"$enc\"") == std::string_view::npos) return r;
    Members m;
    if (!scan_members(stored, &m) || !m.marker) return r;
    if (m.version.substr(0, 6) != "queen.") return r;  // someone else's "$enc": not ours
    r.kind = OpenKind::Broken;
    if (m.kid) r.kid = std::string(m.kid_v);
    if (m.other || m.version != queen::kEnvelopeVersion || !m.kid || !m.iv || !m.ct ||
        (m.cid && !queen::is_content_id(m.cid_v)))
        return r;
    const PayloadKey* k = ring.find(m.kid_v);
    if (k == nullptr) {
        r.kind = OpenKind::KeyUnknown;
        return r;
    }
    std::string iv, sealed;
    if (!unbase64(m.iv_v, &iv) || iv.size() != kIvBytes || !unbase64(m.ct_v, &sealed)) return r;
    if (!aes256gcm_open(k->key.data(), reinterpret_cast<const uint8_t*>(iv.data()),
                        aad_of(m.version, m.kid_v, queue, m.cid ? m.cid_v : std::string_view()),
                        sealed, plaintext))
        return r;
    r.kind = OpenKind::Opened;
    return r;
}

}  // namespace queen::sidecar::crypto
