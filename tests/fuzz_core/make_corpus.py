#!/usr/bin/env python3
"""Write the seed corpus of fuzz_segment: small valid and invalid queen segments.

    python3 tests/fuzz_core/make_corpus.py     (rewrites tests/fuzz_core/corpus/)

The layout is the one src/core/common/segment_codec.h documents:
    header : 'Q' 'S' version(=1) flags(=0)  u32 count
    entry  : id[16]  content_type(u8)  u32 txn_len  txn  u32 payload_len  payload
Integers are little-endian. Content types: 1 JSON, 2 text, 3 octet, 4 binary jsonb (the codec
decodes it; the extension accepts it only from its own SQL push).
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def header(count, version=1, flags=0, magic=b"QS"):
    """The 8-byte segment header."""
    return magic + bytes([version, flags]) + struct.pack("<I", count)


def entry(n, txn, payload, ctype=1):
    """One entry with a recognisable UUIDv7-shaped id derived from n."""
    uid = bytes([0x01, 0x8f, 0, 0, 0, n & 0xFF, 0x70, 0, 0x80]) + bytes(7)
    return uid + bytes([ctype]) + struct.pack("<I", len(txn)) + txn + struct.pack("<I", len(payload)) + payload


def segment(*entries, count=None):
    """A header for the entries (or a given count) followed by them."""
    return header(len(entries) if count is None else count) + b"".join(entries)


SEEDS = {
    # valid
    "empty_segment": segment(),
    "one_json": segment(entry(1, b"order-1001", b'{"sku":"A-1"}')),
    "three_types": segment(
        entry(1, b"t-json", b"[1,2,3]", 1),
        entry(2, b"t-text", b"plain text", 2),
        entry(3, b"t-octet", bytes(range(0, 256, 17)), 3),
    ),
    "empty_payload": segment(entry(4, b"no-payload", b"", 3)),
    "unicode_txn": segment(entry(5, "caf\u00e9-\u65e5\u672c-\U0001f600".encode(), b"{}")),
    "duplicates": segment(entry(6, b"dup", b"1"), entry(7, b"dup", b"2"), entry(8, b"other", b"3")),
    "jsonb_type": segment(entry(23, b"from-sql-push", b"\x01\x00\x00\x20", 4)),
    "empty_txn": segment(entry(9, b"", b"{}")),  # validate_txn_id accepts an empty id
    # decodes, but a transactionId is rejected
    "control_char_txn": segment(entry(10, b"bad\x01id", b"{}"), entry(11, b"good", b"{}")),
    "c1_control_txn": segment(entry(12, b"c1-\xc2\x85", b"{}")),
    "overlong_utf8_txn": segment(entry(13, b"\xc0\xaf", b"{}")),
    "surrogate_txn": segment(entry(14, b"\xed\xa0\x80", b"{}")),
    "truncated_utf8_txn": segment(entry(15, b"ab\xe6\x97", b"{}")),
    # malformed
    "short_header": b"QS\x01",
    "bad_magic": b"QX" + header(0)[2:],
    "bad_version": header(0, version=2),
    "bad_flags": header(0, flags=1),
    "count_too_high": segment(entry(16, b"only-one", b"{}"), count=3),
    "trailing_bytes": segment(entry(17, b"x", b"{}")) + b"\x00\x01",
    "unknown_content_type": segment(entry(18, b"x", b"{}", ctype=9)),
    "txn_len_past_end": header(1) + entry(19, b"abcdef", b"")[:17] + struct.pack("<I", 0xFFFFFFFF) + b"abc",
    "payload_len_past_end": header(1) + entry(20, b"abc", b"")[:-4] + struct.pack("<I", 1000) + b"{}",
    "entry_cut_in_id": segment(entry(21, b"abc", b"{}"))[:14],
    "huge_count": header(0xFFFFFFFF) + entry(22, b"a", b"1"),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")


if __name__ == "__main__":
    main()
