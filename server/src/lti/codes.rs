//! One-time codes: a login's `state` and `nonce`, a launch's handoff code, a deep linking
//! response's `nonce`.

/// 32 random bytes, base64url.
pub(super) fn random() -> Result<String, getrandom::Error> {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}
