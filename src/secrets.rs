//! The secrets hearth makes and what it keeps of them: random bytes from the operating
//! system, secrets written in a given alphabet, and the SHA-256 a database keeps instead of
//! a secret (invite codes, sign-in codes and links, web sessions, member tokens).

use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
#[error("the operating system gave no randomness for a secret: {0}")]
pub struct NoRandomness(String);

/// `N` bytes from the operating system's randomness.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], NoRandomness> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|error| NoRandomness(error.to_string()))?;
    Ok(bytes)
}

/// `length` characters drawn from `alphabet` (at most 256 letters). The small bias of a
/// byte taken modulo the alphabet's size costs well under a bit of the whole.
pub fn random_text<const LENGTH: usize>(alphabet: &[u8]) -> Result<String, NoRandomness> {
    Ok(random_bytes::<LENGTH>()?
        .iter()
        .map(|byte| alphabet[usize::from(*byte) % alphabet.len()] as char)
        .collect())
}

/// A secret of 256 bits written in lowercase hex, behind `prefix` (which says what it is
/// when it turns up somewhere: `hearth_token_...`).
pub fn random_key(prefix: &str) -> Result<String, NoRandomness> {
    Ok(format!("{prefix}{}", hex(&random_bytes::<32>()?)))
}

/// What the database keeps of a secret.
/// The SHA-256 of `secret`, as bytes: what two secrets are compared by in constant time,
/// whatever their lengths.
pub fn sha256(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

pub fn sha256_hex(secret: &[u8]) -> String {
    hex(&Sha256::digest(secret))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_and_hashes_are_stable() {
        let first = random_key("k_").unwrap();
        let second = random_key("k_").unwrap();
        assert_ne!(first, second);
        assert_eq!(first.len(), 2 + 64);
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let digits = random_text::<6>(b"0123456789").unwrap();
        assert!(digits.chars().all(|c| c.is_ascii_digit()) && digits.len() == 6);
    }
}
