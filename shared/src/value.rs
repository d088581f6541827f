//! Typed cell values: integers, text, exact decimals, dates and timestamps, and SQL NULL.

use std::cmp::Ordering;
use std::fmt;

use chrono::{NaiveDate, NaiveDateTime, Timelike};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// The type of a column or message field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    /// A whole number, written in JSON as a number.
    Integer,
    /// Text, written as a string.
    Text,
    /// An exact decimal (money), written as a string such as "25.00" so it stays exact.
    Decimal,
    /// A calendar date, written as "YYYY-MM-DD".
    Date,
    /// A UTC timestamp, written as "YYYY-MM-DDTHH:MM:SSZ".
    Timestamp,
}

impl ColumnType {
    pub fn sql_name(self) -> &'static str {
        match self {
            ColumnType::Integer => "BIGINT",
            ColumnType::Text => "TEXT",
            ColumnType::Decimal => "NUMERIC(12,2)",
            ColumnType::Date => "DATE",
            ColumnType::Timestamp => "TIMESTAMP",
        }
    }
}

/// One cell. `Null` is SQL NULL: it never equals anything as a key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
    Decimal(Decimal),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Parses a JSON value as a cell of the given type. Decimals must be strings (or integers)
    /// so that money is never rounded through floating point.
    pub fn from_json(ty: ColumnType, json: &serde_json::Value) -> Result<Value, String> {
        use serde_json::Value as J;
        if json.is_null() {
            return Ok(Value::Null);
        }
        match ty {
            ColumnType::Integer => match json {
                J::Number(n) if n.is_i64() => Ok(Value::Int(n.as_i64().unwrap_or_default())),
                _ => Err(format!("expected a whole number, found {json}")),
            },
            ColumnType::Text => match json {
                J::String(s) => Ok(Value::Text(s.clone())),
                _ => Err(format!("expected a string, found {json}")),
            },
            ColumnType::Decimal => match json {
                J::String(s) => s
                    .parse::<Decimal>()
                    .map(Value::Decimal)
                    .map_err(|_| format!("\"{s}\" is not a decimal number such as \"25.00\"")),
                J::Number(n) if n.is_i64() => Ok(Value::Decimal(Decimal::from(
                    n.as_i64().unwrap_or_default(),
                ))),
                J::Number(n) => Err(format!(
                    "write the decimal {n} as a string (\"{n}\") so it stays exact"
                )),
                _ => Err(format!(
                    "expected a decimal string such as \"25.00\", found {json}"
                )),
            },
            ColumnType::Date => match json {
                J::String(s) => {
                    parse_date(s)
                        .map(Value::Date)
                        .map_err(|_| match why_not_a_date(s) {
                            Some(why) => format!("\"{s}\" is not a date: {why}"),
                            None => format!("\"{s}\" is not a date written as YYYY-MM-DD"),
                        })
                }
                _ => Err(format!(
                    "expected a date string such as \"2026-01-10\", found {json}"
                )),
            },
            ColumnType::Timestamp => match json {
                J::String(s) => parse_timestamp(s).map(Value::Timestamp).ok_or_else(|| {
                    match why_not_a_date(s.split(['T', ' ']).next().unwrap_or(s)) {
                        Some(why) => format!("\"{s}\" is not a timestamp: {why}"),
                        None => {
                            format!("\"{s}\" is not a timestamp written as YYYY-MM-DDTHH:MM:SSZ")
                        }
                    }
                }),
                _ => Err(format!("expected a timestamp string, found {json}")),
            },
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Int(i) => serde_json::Value::from(*i),
            other => serde_json::Value::String(other.to_string()),
        }
    }

    /// The value as a SQL literal (PostgreSQL).
    pub fn sql_literal(&self) -> String {
        self.literal(crate::dialect::Dialect::Postgres)
    }

    /// The value as a SQL literal of a dialect. SQLite has no date types: dates and times are
    /// ISO text, which compares in the same order.
    pub fn literal(&self, dialect: crate::dialect::Dialect) -> String {
        match (self, dialect) {
            (Value::Date(d), crate::dialect::Dialect::Sqlite) => return format!("'{d}'"),
            (Value::Timestamp(t), crate::dialect::Dialect::Sqlite) => {
                return format!("'{}'", format_sql_time(*t))
            }
            _ => {}
        }
        match self {
            Value::Null => "NULL".into(),
            Value::Int(i) => i.to_string(),
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Decimal(d) => d.to_string(),
            Value::Date(d) => format!("DATE '{d}'"),
            Value::Timestamp(t) => format!("TIMESTAMP '{}'", format_sql_time(*t)),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Int(_) => 1,
            Value::Decimal(_) => 2,
            Value::Text(_) => 3,
            Value::Date(_) => 4,
            Value::Timestamp(_) => 5,
        }
    }

    /// SQL comparison: `None` when either side is NULL or the types cannot be compared.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Decimal(a), Value::Decimal(b)) => Some(a.cmp(b)),
            (Value::Int(a), Value::Decimal(b)) => Some(Decimal::from(*a).cmp(b)),
            (Value::Decimal(a), Value::Int(b)) => Some(a.cmp(&Decimal::from(*b))),
            (Value::Text(a), Value::Text(b)) => Some(a.cmp(b)),
            (Value::Date(a), Value::Date(b)) => Some(a.cmp(b)),
            (Value::Timestamp(a), Value::Timestamp(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// Key equality as a unique index sees it: NULL never equals anything.
    pub fn key_eq(&self, other: &Value) -> bool {
        self.sql_cmp(other) == Some(Ordering::Equal)
    }

    /// The order in which requirements compare whole tables: `Ord`, but with decimals by value
    /// alone, so that two values are equal here exactly when they are `==` (25.0 and 25.00 are
    /// the same amount; NULL equals NULL, as a row's contents do).
    pub fn content_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b),
            _ => self.cmp(other),
        }
    }
}

/// Compares two rows cell by cell with [`Value::content_cmp`].
pub fn row_content_cmp(a: &[Value], b: &[Value]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.content_cmp(y))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.len().cmp(&b.len()))
}

/// A total order for sorting rows deterministically (NULL first). Decimals compare by
/// value and then by scale, so that 25.0 and 25.00 sort apart but stably.
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b).then(a.scale().cmp(&b.scale())),
            _ => match self.sql_cmp(other) {
                Some(o) => o,
                None => self.rank().cmp(&other.rank()),
            },
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Text(s) => f.write_str(s),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Date(d) => write!(f, "{d}"),
            Value::Timestamp(t) => write!(f, "{}", format_time(*t)),
        }
    }
}

// Dates and times are read and written by hand rather than through chrono's format strings,
// whose machinery is a large part of the browser app's size. A date's Display is ISO 8601
// (`2026-01-10`), as `%Y-%m-%d` would write it.

/// Why text shaped like `YYYY-MM-DD` names no day, in an author's words ("there is no month
/// 13"); `None` when it is a day, or is not shaped like one at all.
pub fn why_not_a_date(s: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let mut parts = s.splitn(3, '-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    let number = |p: &str, len: usize| {
        (p.len() == len && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u32>().ok())
            .flatten()
    };
    let (year, month, day) = (number(y, 4)?, number(m, 2)?, number(d, 2)?);
    if !(1..=12).contains(&month) {
        return Some(format!(
            "there is no month {month} (the month comes second, from 01 to 12)"
        ));
    }
    let last = (28..=31)
        .rev()
        .find(|&n| NaiveDate::from_ymd_opt(year as i32, month, n).is_some())?;
    if day == 0 || day > last {
        let name = MONTHS[month as usize - 1];
        return Some(format!(
            "{name} {year} has {last} days, so there is no day {day}"
        ));
    }
    None
}

/// Why a date could not be read, in the words of chrono's `ParseError`, which authors see in
/// the errors of a scenario file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateError {
    OutOfRange,
    Invalid,
    TooShort,
    TooLong,
}

impl fmt::Display for DateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DateError::OutOfRange => "input is out of range",
            DateError::Invalid => "input contains invalid characters",
            DateError::TooShort => "premature end of input",
            DateError::TooLong => "trailing input",
        })
    }
}

/// `YYYY-MM-DD`, read exactly as chrono's `NaiveDate::from_str` reads it (spaces before each
/// number and each dash, a signed year of any length, one or two digits of month and day),
/// with the same errors.
pub fn parse_date(s: &str) -> Result<NaiveDate, DateError> {
    use DateError::*;
    fn number(s: &str, max: usize) -> Result<(&str, i64), DateError> {
        let bytes = s.as_bytes();
        if bytes.is_empty() {
            return Err(TooShort);
        }
        let mut n = 0i64;
        for (i, &c) in bytes.iter().take(max).enumerate() {
            if !c.is_ascii_digit() {
                return if i == 0 {
                    Err(Invalid)
                } else {
                    Ok((&s[i..], n))
                };
            }
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(i64::from(c - b'0')))
                .ok_or(OutOfRange)?;
        }
        Ok((&s[max.min(bytes.len())..], n))
    }
    fn dash(s: &str) -> Result<&str, DateError> {
        let s = s.trim_start();
        if s.is_empty() {
            return Err(TooShort);
        }
        s.strip_prefix('-').ok_or(Invalid)
    }
    let s = s.trim_start();
    let (s, year) = if let Some(rest) = s.strip_prefix('-') {
        let (s, v) = number(rest, usize::MAX)?;
        (s, 0i64.checked_sub(v).ok_or(OutOfRange)?)
    } else if let Some(rest) = s.strip_prefix('+') {
        number(rest, usize::MAX)?
    } else {
        number(s, 4)?
    };
    let year = i32::try_from(year).map_err(|_| OutOfRange)?;
    let (s, month) = number(dash(s)?.trim_start(), 2)?;
    if !(1..=12).contains(&month) {
        return Err(OutOfRange);
    }
    let (s, day) = number(dash(s)?.trim_start(), 2)?;
    if !(1..=31).contains(&day) {
        return Err(OutOfRange);
    }
    if !s.trim_start().is_empty() {
        return Err(TooLong);
    }
    NaiveDate::from_ymd_opt(year, month as u32, day as u32).ok_or(OutOfRange)
}

/// A date in a scenario file, read by [`parse_date`] as chrono's serde reads it.
pub(crate) fn deserialize_date<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<NaiveDate, D::Error> {
    struct DateVisitor;
    impl serde::de::Visitor<'_> for DateVisitor {
        type Value = NaiveDate;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a formatted date string")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NaiveDate, E> {
            parse_date(v).map_err(E::custom)
        }
    }
    d.deserialize_str(DateVisitor)
}

/// `YYYY-MM-DDTHH:MM:SS`, or with a space for the `T`, with an optional `Z`.
pub fn parse_timestamp(s: &str) -> Option<NaiveDateTime> {
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = s.split_once(['T', ' '])?;
    let date = parse_date(date).ok()?;
    let mut parts = time.split(':').map(|p| {
        (p.len() <= 2 && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u32>().ok())
            .flatten()
    });
    let (h, m, sec) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() {
        return None;
    }
    date.and_hms_opt(h, m, sec)
}

/// `2026-01-10T01:00:00Z`.
pub fn format_time(t: NaiveDateTime) -> String {
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        t.date(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `2026-01-10 01:00:00`, as SQL writes a timestamp.
fn format_sql_time(t: NaiveDateTime) -> String {
    format!(
        "{} {:02}:{:02}:{:02}",
        t.date(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same_as_chrono(s: &str) {
        let chrono = s.parse::<NaiveDate>().map_err(|e| e.to_string());
        assert_eq!(parse_date(s).map_err(|e| e.to_string()), chrono, "{s:?}");
    }

    #[test]
    fn dates_read_as_chrono_reads_them() {
        for s in [
            "2026-01-10",
            "2026-1-5",
            " 2026 - 01 - 10 ",
            "2026-01-10 ",
            "2026-01-10x",
            "2026-02-30",
            "2026-13-01",
            "2026-00-01",
            "2026-01-00",
            "2026-01-32",
            "+2026-01-10",
            "-0001-01-01",
            "+99999999999-01-01",
            "-",
            "+",
            "",
            " ",
            "2026",
            "2026-",
            "2026-01",
            "2026-01-",
            "20261-01-10",
            "2026-001-10",
            "2026-01-100",
            "2026/01/10",
            "x",
            "٢٠٢٦-01-10",
            "2026-01-10T00:00:00",
            "99999999999999999999-01-01",
            "-99999999999999999999-01-01",
            "2026-\u{a0}01-10",
            "\u{2003}2026-01-10",
        ] {
            same_as_chrono(s);
        }
    }

    #[test]
    fn dates_deserialise_as_chrono_deserialises_them() {
        #[derive(Deserialize)]
        struct Mine {
            #[serde(deserialize_with = "deserialize_date")]
            d: NaiveDate,
        }
        #[derive(Deserialize)]
        struct Theirs {
            d: NaiveDate,
        }
        for text in [
            r#"{"d":"2026-01-10"}"#,
            r#"{"d":" 2026-1-5 "}"#,
            r#"{"d":"2026-02-30"}"#,
            r#"{"d":"2026-01-10T00:00:00Z"}"#,
            r#"{"d":"x"}"#,
            r#"{"d":5}"#,
            r#"{"d":null}"#,
            r#"{"d":["2026-01-10"]}"#,
        ] {
            let mine = serde_json::from_str::<Mine>(text).map(|m| m.d);
            let theirs = serde_json::from_str::<Theirs>(text).map(|t| t.d);
            assert_eq!(
                mine.map_err(|e| e.to_string()),
                theirs.map_err(|e| e.to_string()),
                "{text}"
            );
            let json: serde_json::Value = serde_json::from_str(text).unwrap();
            let mine = serde_json::from_value::<Mine>(json.clone()).map(|m| m.d);
            let theirs = serde_json::from_value::<Theirs>(json).map(|t| t.d);
            assert_eq!(
                mine.map_err(|e| e.to_string()),
                theirs.map_err(|e| e.to_string()),
                "{text}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_date_text_reads_as_chrono_reads_it(s in "[0-9 +\\-x]{0,16}") {
            same_as_chrono(&s);
        }

        #[test]
        fn date_like_text_reads_as_chrono_reads_it(
            s in "[ ]?[+-]?[0-9]{0,6}[ ]?-?[ ]?[0-9]{0,3}[ ]?-?[ ]?[0-9]{0,3}[ x]?"
        ) {
            same_as_chrono(&s);
        }
    }

    #[test]
    fn timestamps_read_and_write_as_the_scenario_files_and_sql_have_them() {
        let t = parse_timestamp("2026-01-10T01:02:03Z").unwrap();
        assert_eq!(format_time(t), "2026-01-10T01:02:03Z");
        assert_eq!(parse_timestamp("2026-01-10 01:02:03"), Some(t));
        assert_eq!(parse_timestamp("2026-01-10T1:2:3"), Some(t));
        assert_eq!(
            Value::Timestamp(t).literal(crate::dialect::Dialect::Sqlite),
            "'2026-01-10 01:02:03'"
        );
        assert_eq!(
            Value::Timestamp(t).literal(crate::dialect::Dialect::Postgres),
            "TIMESTAMP '2026-01-10 01:02:03'"
        );
        assert_eq!(
            Value::Date(t.date()).literal(crate::dialect::Dialect::Postgres),
            "DATE '2026-01-10'"
        );
        for bad in [
            "2026-01-10",
            "2026-01-10T01:02",
            "2026-01-10T01:02:03:04",
            "2026-01-10T24:00:00",
            "2026-02-30T00:00:00",
            "2026-01-10T01:02:3.5",
            "2026-01-10T001:02:03",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }
}
