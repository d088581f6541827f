//! The JSON the server answers and the browser sends, stated once for both: the server
//! serializes these types and the app reads them, so a field renamed here is renamed on both
//! sides or the build fails. Plain data, one module per resource; the OpenAPI schemas are
//! derived from them under the `openapi` feature.
//!
//! A verdict or a design that the server stored is carried as JSON (`serde_json::Value`): an
//! attempt made under an older version of the format is still answered as it was given.

pub mod author;
pub mod catalogue;
pub mod classes;
pub mod errors;
pub mod session;
pub mod submissions;
