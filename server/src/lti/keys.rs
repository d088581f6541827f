//! The tool's RSA keys: made at first need and kept in the database, published as a JWKS, and
//! rotated by `pipeline-builder lti key rotate` (the old key stays published for a day, so
//! what it signed can still be verified). The `rsa` crate only generates keys; signing is
//! `jsonwebtoken`'s.

use base64::Engine;
use chrono::{Duration, Utc};
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
    RSAKeyParameters, RSAKeyType,
};
use rsa::pkcs8::{EncodePrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;

use super::store::ToolKey;
use crate::store::{Store, StoreResult};

/// How long a retired key is still published.
pub const RETIRED_KEY_PUBLISHED: Duration = Duration::days(1);
/// The size of the tool's keys.
const KEY_BITS: usize = 2048;

/// A new key, not yet stored.
pub fn generate() -> Result<ToolKey, String> {
    let mut rng = rsa::rand_core::OsRng;
    let private = rsa::RsaPrivateKey::new(&mut rng, KEY_BITS).map_err(|e| e.to_string())?;
    let pem = private
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| e.to_string())?
        .to_string();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let n = b64.encode(private.n().to_bytes_be());
    let e = b64.encode(private.e().to_bytes_be());
    let kid = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(n.as_bytes());
        b64.encode(&digest[..12])
    };
    Ok(ToolKey {
        kid,
        private_pem: pem,
        n,
        e,
        created_at: Utc::now(),
        retired_at: None,
    })
}

/// The key that signs now, made and stored if there is none.
pub async fn current(store: &Store) -> Result<ToolKey, String> {
    let keys = store
        .lti_keys(Utc::now() - RETIRED_KEY_PUBLISHED)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(key) = keys.into_iter().find(|k| k.retired_at.is_none()) {
        return Ok(key);
    }
    let key = tokio::task::spawn_blocking(generate)
        .await
        .map_err(|e| e.to_string())??;
    store.add_lti_key(&key).await.map_err(|e| e.to_string())?;
    Ok(key)
}

/// Makes a new key and retires the others; answers the new key's id.
pub async fn rotate(store: &Store) -> Result<String, String> {
    let key = tokio::task::spawn_blocking(generate)
        .await
        .map_err(|e| e.to_string())??;
    store.add_lti_key(&key).await.map_err(|e| e.to_string())?;
    store
        .retire_lti_keys_except(&key.kid)
        .await
        .map_err(|e| e.to_string())?;
    Ok(key.kid)
}

/// The published key set: the current key (made if there is none) and the keys retired less
/// than [`RETIRED_KEY_PUBLISHED`] ago.
pub async fn published(store: &Store) -> Result<JwkSet, String> {
    current(store).await?;
    let keys: StoreResult<Vec<ToolKey>> = store.lti_keys(Utc::now() - RETIRED_KEY_PUBLISHED).await;
    let keys = keys.map_err(|e| e.to_string())?;
    Ok(JwkSet {
        keys: keys
            .into_iter()
            .map(|k| Jwk {
                common: CommonParameters {
                    public_key_use: Some(PublicKeyUse::Signature),
                    key_id: Some(k.kid),
                    key_algorithm: Some(KeyAlgorithm::RS256),
                    ..CommonParameters::default()
                },
                algorithm: AlgorithmParameters::RSA(RSAKeyParameters {
                    key_type: RSAKeyType::RSA,
                    n: k.n,
                    e: k.e,
                }),
            })
            .collect(),
    })
}
