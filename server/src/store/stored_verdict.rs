//! An attempt's verdict as the database keeps it. An attempt recorded now keeps its verdict's
//! JSON text compressed with zlib in `verdict_deflate`, and JSON `null` in `verdict`; one
//! recorded before keeps the JSON in `verdict` and nothing in `verdict_deflate`. Reading gives
//! the same verdict either way.
//!
//! A verdict's JSON repeats its keys, its tables' columns and its trace's words: compressed, it
//! is about a sixth of its size (8.9 KB to 1.4 KB on average over the shipped scenarios'
//! designs), so an attempt's row fits in one page of SQLite, and a submission writes that much
//! less before its answer.

use std::io::{Read, Write};
use std::sync::Arc;

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use serde_json::Value as Json;

use crate::store::errors::{unknown_stored, StoreResult};

/// The JSON text of a verdict, compressed as `verdict_deflate` holds it.
pub fn deflate(json: &str) -> Arc<[u8]> {
    let mut encoder = ZlibEncoder::new(Vec::with_capacity(json.len() / 4), Compression::default());
    // Writing into a `Vec` cannot fail.
    encoder
        .write_all(json.as_bytes())
        .expect("compressing into memory");
    encoder.finish().expect("compressing into memory").into()
}

/// The verdict of an attempt's row, from its two columns: `deflated` when it is there, else
/// `json`. A compressed verdict that does not decompress or parse is an error, never a
/// verdict made up.
pub fn verdict_of(json: Json, deflated: Option<&[u8]>) -> StoreResult<Json> {
    let Some(bytes) = deflated else {
        return Ok(json);
    };
    let mut text = Vec::with_capacity(bytes.len() * 8);
    ZlibDecoder::new(bytes)
        .read_to_end(&mut text)
        .map_err(|e| {
            unknown_stored(format!(
                "a compressed verdict that does not decompress ({e})"
            ))
        })?;
    serde_json::from_slice(&text)
        .map_err(|e| unknown_stored(format!("a compressed verdict that is not JSON ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_verdict_comes_back_as_it_went_in_and_smaller() {
        let verdict = json!({
            "score": 2, "max_score": 3, "passed": false,
            "requirements": (0..40).map(|i| json!({"id": format!("r{i}"), "passed": i % 2 == 0, "text": "daily_revenue for 2026-01-10 is 80.50"})).collect::<Vec<_>>(),
        });
        let text = verdict.to_string();
        let deflated = deflate(&text);
        assert!(
            deflated.len() * 4 < text.len(),
            "{} of {}",
            deflated.len(),
            text.len()
        );
        assert_eq!(verdict_of(Json::Null, Some(&deflated)).unwrap(), verdict);
    }

    #[test]
    fn a_verdict_recorded_before_is_read_from_its_json() {
        let verdict = json!({"score": 1});
        assert_eq!(verdict_of(verdict.clone(), None).unwrap(), verdict);
    }

    #[test]
    fn damaged_bytes_are_an_error() {
        let deflated = deflate(r#"{"score":1}"#);
        let mut damaged = deflated.to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        assert!(verdict_of(Json::Null, Some(&damaged)).is_err());
        assert!(verdict_of(Json::Null, Some(b"not zlib")).is_err());
        assert!(verdict_of(Json::Null, Some(&deflate("not json"))).is_err());
    }
}
