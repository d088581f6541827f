//! What reading or writing the database can come to: the result of every store call, and
//! the error of a stored value the server does not know.

pub type StoreResult<T> = Result<T, sqlx::Error>;

/// A value read from the database that the server does not know (a row written by hand, or
/// by a newer version): an error, answered 500 and logged, never read as a default.
#[derive(Debug)]
pub struct UnknownStoredValue(pub String);

impl std::fmt::Display for UnknownStoredValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the database holds a value the server does not know: {}",
            self.0
        )
    }
}

impl std::error::Error for UnknownStoredValue {}

/// The error of reading [`UnknownStoredValue`] `what`.
pub fn unknown_stored(what: impl Into<String>) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(UnknownStoredValue(what.into())))
}
