--
-- hash: queen.txn_hash (the dedup identity) and queen.log_unnest_hashes (splitting a
-- log_txns.hashes blob). Identity = xxh3_128 of the transactionId's UTF-8 bytes, kept in the
-- 16-byte canonical big-endian form (libxxhash XXH3_128bits + XXH128_canonicalFromHash).
--

-- The two published vectors, shown raw (hex bytea) and compared.
SELECT queen.txn_hash('') AS empty_string,
       queen.txn_hash('txn-0001') AS txn_0001;
SELECT queen.txn_hash('') = '\x99aa06d3014798d86001c324468d497f'::bytea AS empty_ok,
       queen.txn_hash('txn-0001') = '\xe6db1a376171f085299a000943065f9c'::bytea AS txn_0001_ok;

-- More vectors, computed with libxxhash, covering every XXH3 length class
-- (1-3, 9-16, 17-128, 129-240, >240 bytes, and past the 65,535-byte transactionId limit:
-- the hash function itself hashes any text).
SELECT queen.txn_hash('abc') = '\x06b05ab6733a618578af5f94892f3950'::bytea AS len_3,
       queen.txn_hash('0123456789abcdef0') = '\x4d011b9cf16c97fc259d04103128b07b'::bytea AS len_17,
       queen.txn_hash(repeat('a', 200)) = '\xcffe968d25cc79dac8654f5c46034008'::bytea AS len_200,
       queen.txn_hash(repeat('a', 1000)) = '\xb01da365eddaa29cb3e7af627147db7c'::bytea AS len_1000,
       queen.txn_hash(repeat('a', 65536)) = '\x12e3e99967666ce3a961765b4ecbfa5f'::bytea AS len_65536;

-- The UTF-8 bytes are hashed: U+00E9 is the two bytes c3 a9 (built from bytes so this file is
-- pure ASCII and works whatever the database encoding).
SELECT queen.txn_hash(convert_from('\xc3a9'::bytea, 'UTF8'))
       = '\x90326970ab18793af7940a006cf10cb3'::bytea AS e_acute;

-- Always 16 bytes, and deterministic.
SELECT octet_length(queen.txn_hash('x')) AS len,
       queen.txn_hash('same') = queen.txn_hash('same') AS deterministic,
       queen.txn_hash('a') <> queen.txn_hash('b') AS distinct_inputs;

-- log_unnest_hashes: idx is 0-based, h is each 16-byte slice in order.
SELECT idx, h, h = queen.txn_hash('t' || idx) AS matches
FROM queen.log_unnest_hashes(queen.txn_hash('t0') || queen.txn_hash('t1') || queen.txn_hash('t2'))
ORDER BY idx;

-- One hash: a single row with idx 0.
SELECT idx, h = queen.txn_hash('only') AS matches
FROM queen.log_unnest_hashes(queen.txn_hash('only'));

-- An empty blob yields no rows (and no error).
SELECT count(*) AS rows_from_empty FROM queen.log_unnest_hashes(''::bytea);

-- A larger blob: 1000 hashes, every slice at its index.
SELECT count(*) AS n, min(idx) AS first_idx, max(idx) AS last_idx,
       bool_and(h = queen.txn_hash(idx::text)) AS all_match
FROM queen.log_unnest_hashes(
       (SELECT string_agg(queen.txn_hash(i::text), ''::bytea ORDER BY i)
        FROM generate_series(0, 999) AS i));

-- A length that is not a multiple of 16 is an ERROR with SQLSTATE 22023.
\i tests/regress/sql/sqlstate_of.psql
SELECT n AS blob_bytes,
       pg_temp.sqlstate_of(format('SELECT * FROM queen.log_unnest_hashes(%L::bytea)',
                                  '\x' || repeat('ab', n))) AS sqlstate
FROM unnest(ARRAY[1, 15, 17, 31, 33, 47]) AS n
ORDER BY n;

-- And the message says what is wrong (shown once, default verbosity without context).
\set VERBOSITY terse
SELECT * FROM queen.log_unnest_hashes('\x00'::bytea);
\set VERBOSITY default
