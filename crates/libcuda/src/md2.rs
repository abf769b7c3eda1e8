//! MD2 (RFC 1319) and the HMAC built on it that NVIDIA's cudart uses to
//! check that it talks to a genuine driver (the integrity export table,
//! see `export_tables`).

/// RFC 1319's byte permutation "constructed from the digits of pi",
/// regenerated here from pi's digits (draw `rand(i)` for i = 2..=256 from
/// successive digits, rejecting biased draws, and swap `S[rand(i)]` with
/// `S[i-1]`); the known-answer tests below pin it.
const S: [u8; 256] = [
    41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19, 98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76,
    130, 202, 30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18, 190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245,
    142, 187, 47, 238, 122, 169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33, 128, 127, 93, 154, 90, 144, 50, 39, 53,
    62, 204, 231, 191, 247, 151, 3, 255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198, 79, 184, 56, 210, 150, 164,
    125, 182, 118, 252, 107, 226, 156, 116, 4, 241, 69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2, 27, 96, 37,
    173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15, 85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38, 44,
    83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82, 106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189,
    177, 74, 120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57, 242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114,
    248, 235, 117, 75, 10, 49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
];

/// The MD2 digest of `data`.
pub fn md2(data: &[u8]) -> [u8; 16] {
    let pad = 16 - data.len() % 16;
    let mut msg = Vec::with_capacity(data.len() + pad + 16);
    msg.extend_from_slice(data);
    msg.extend(std::iter::repeat_n(pad as u8, pad));
    // The checksum, XORed in as RFC 1319's reference code (and its
    // erratum) have it.
    let mut c = [0u8; 16];
    let mut l = 0u8;
    for block in msg.chunks_exact(16) {
        for j in 0..16 {
            c[j] ^= S[(block[j] ^ l) as usize];
            l = c[j];
        }
    }
    msg.extend_from_slice(&c);
    let mut x = [0u8; 48];
    for block in msg.chunks_exact(16) {
        for j in 0..16 {
            x[16 + j] = block[j];
            x[32 + j] = x[16 + j] ^ x[j];
        }
        let mut t = 0u8;
        for j in 0..18u8 {
            for xk in x.iter_mut() {
                *xk ^= S[t as usize];
                t = *xk;
            }
            t = t.wrapping_add(j);
        }
    }
    let mut out = [0u8; 16];
    out.copy_from_slice(&x[..16]);
    out
}

/// HMAC over MD2 with its 16-byte block:
/// `MD2((K ^ 0x5c..) || MD2((K ^ 0x36..) || message))`.
pub fn hmac_md2(key: &[u8; 16], message: &[u8]) -> [u8; 16] {
    let mut inner = Vec::with_capacity(16 + message.len());
    inner.extend(key.iter().map(|k| k ^ 0x36));
    inner.extend_from_slice(message);
    let ih = md2(&inner);
    let mut outer = Vec::with_capacity(32);
    outer.extend(key.iter().map(|k| k ^ 0x5c));
    outer.extend_from_slice(&ih);
    md2(&outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// The test suite of RFC 1319, appendix A.5.
    #[test]
    fn rfc1319_known_answers() {
        let cases: [(&str, &str); 7] = [
            ("", "8350e5a3e24c153df2275c9f80692773"),
            ("a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"),
            ("abc", "da853b0d3f88d99b30283a69e6ded6bb"),
            ("message digest", "ab4f496bfb2a530b219ff33031fe06b0"),
            ("abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "da33def2a42df13975352846c30338cd"),
            ("12345678901234567890123456789012345678901234567890123456789012345678901234567890", "d5976f79d83d3a0dc9806c3c66f3efd8"),
        ];
        for (msg, want) in cases {
            assert_eq!(hex(&md2(msg.as_bytes())), want, "MD2({msg:?})");
        }
    }

    #[test]
    fn s_is_a_permutation() {
        let mut seen = [false; 256];
        for &s in S.iter() {
            assert!(!seen[s as usize]);
            seen[s as usize] = true;
        }
    }

    #[test]
    fn hmac_differs_from_plain_digest_and_depends_on_key() {
        let k1 = [1u8; 16];
        let k2 = [2u8; 16];
        assert_ne!(hmac_md2(&k1, b"x"), hmac_md2(&k2, b"x"));
        assert_ne!(hmac_md2(&k1, b"x"), md2(b"x"));
        assert_eq!(hmac_md2(&k1, b"x"), hmac_md2(&k1, b"x"));
    }
}
