//! 128-bit fingerprints of simulator states, for the search's merged states: two independent
//! seeded 64-bit hashes (foldhash, quality variant) fed the same bytes.
//!
//! A fingerprint only has to be equal for equal states; unequal values that SQL compares
//! equal (25.0 and 25.00) may fingerprint differently, which costs a merge, never a verdict.

use std::hash::{BuildHasher, Hasher};

use foldhash::quality::{FixedState, FoldHasher};

use crate::value::Value;

pub(crate) struct Fingerprint {
    a: FoldHasher,
    b: FoldHasher,
}

impl Fingerprint {
    pub(crate) fn new(tag: u8) -> Fingerprint {
        let mut f = Fingerprint {
            a: FixedState::with_seed(0x243f_6a88_85a3_08d3).build_hasher(),
            b: FixedState::with_seed(0x1319_8a2e_0370_7344).build_hasher(),
        };
        f.write_u8(tag);
        f
    }

    #[inline]
    pub(crate) fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.write_u8(0),
            Value::Int(i) => {
                self.write_u8(1);
                self.write_i64(*i);
            }
            Value::Text(s) => {
                self.write_u8(2);
                self.write_usize(s.len());
                self.write(s.as_bytes());
            }
            Value::Decimal(d) => {
                self.write_u8(3);
                self.write(&d.serialize());
            }
            Value::Date(d) => {
                self.write_u8(4);
                self.write_i32(chrono::Datelike::num_days_from_ce(d));
            }
            Value::Timestamp(t) => {
                self.write_u8(5);
                self.write_i64(t.and_utc().timestamp());
                self.write_u32(t.and_utc().timestamp_subsec_nanos());
            }
        }
    }

    #[inline]
    pub(crate) fn values<'v>(&mut self, values: impl ExactSizeIterator<Item = &'v Value>) {
        self.write_usize(values.len());
        for v in values {
            self.value(v);
        }
    }

    pub(crate) fn finish128(&self) -> u128 {
        (u128::from(self.a.finish()) << 64) | u128::from(self.b.finish())
    }
}

impl Hasher for Fingerprint {
    fn write(&mut self, bytes: &[u8]) {
        self.a.write(bytes);
        self.b.write(bytes);
    }

    fn write_u8(&mut self, i: u8) {
        self.a.write_u8(i);
        self.b.write_u8(i);
    }

    fn write_u32(&mut self, i: u32) {
        self.a.write_u32(i);
        self.b.write_u32(i);
    }

    fn write_u64(&mut self, i: u64) {
        self.a.write_u64(i);
        self.b.write_u64(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.a.write_usize(i);
        self.b.write_usize(i);
    }

    fn finish(&self) -> u64 {
        self.a.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[Value]) -> u128 {
        let mut f = Fingerprint::new(0);
        f.values(values.iter());
        f.finish128()
    }

    #[test]
    fn equal_values_give_equal_fingerprints_and_different_ones_do_not() {
        let d = |s: &str| Value::Decimal(s.parse().unwrap());
        assert_eq!(
            of(&[Value::Int(1), d("2.50")]),
            of(&[Value::Int(1), d("2.50")])
        );
        assert_ne!(
            of(&[Value::Int(1), d("2.50")]),
            of(&[Value::Int(1), d("2.51")])
        );
        assert_ne!(
            of(&[Value::Int(1), Value::Null]),
            of(&[Value::Null, Value::Int(1)])
        );
        assert_ne!(
            of(&[Value::Text("ab".into()), Value::Text("c".into())]),
            of(&[Value::Text("a".into()), Value::Text("bc".into())])
        );
        assert_ne!(of(&[Value::Int(0)]), of(&[Value::Null]));
    }
}
